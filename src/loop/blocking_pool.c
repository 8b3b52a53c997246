/* blocking_pool.c — the thread pool behind sp_run_blocking. Threads block
 * every signal (signals are for the loop's thread), start on demand up to a
 * bound, and report finished jobs through an eventfd. */
#include "loop/blocking_pool.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define POOL_MAX_THREADS 64

struct blocking_pool {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    blocking_job *queue_head, *queue_tail; /* waiting to run */
    blocking_job *done;                    /* finished, for the loop */
    int efd;
    int max_threads, nthreads, idle, nqueued;
    int stopping;
    pthread_t threads[POOL_MAX_THREADS];
};

static void *worker_main(void *arg) {
    blocking_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->queue_head && !p->stopping) {
            p->idle++;
            pthread_cond_wait(&p->cond, &p->mu);
            p->idle--;
        }
        blocking_job *job = p->queue_head;
        if (!job)
            break; /* stopping, and the queue is drained */
        p->queue_head = job->next;
        p->nqueued--;
        if (!p->queue_head)
            p->queue_tail = NULL;
        pthread_mutex_unlock(&p->mu);

        job->result = job->fn(job->arg);

        pthread_mutex_lock(&p->mu);
        job->next = p->done;
        p->done = job;
        uint64_t one = 1;
        /* An eventfd write only fails on counter overflow, which the loop's
         * reads rule out. */
        ssize_t w = write(p->efd, &one, sizeof one);
        (void)w;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

blocking_pool *blocking_pool_create(int max_threads, int *efd_out) {
    blocking_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (p->efd < 0)
        goto fail_free;
    if (pthread_mutex_init(&p->mu, NULL) != 0)
        goto fail_efd;
    if (pthread_cond_init(&p->cond, NULL) != 0)
        goto fail_mu;
    p->max_threads = max_threads < 1                  ? 1
                     : max_threads > POOL_MAX_THREADS ? POOL_MAX_THREADS
                                                      : max_threads;
    *efd_out = p->efd;
    return p;
fail_mu:
    pthread_mutex_destroy(&p->mu);
fail_efd:
    close(p->efd);
fail_free:
    free(p);
    return NULL;
}

/* Starts one more thread with every signal blocked. Called with mu held. */
static int start_thread(blocking_pool *p) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&p->threads[p->nthreads], NULL, worker_main, p);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return -rc;
    p->nthreads++;
    return 0;
}

int blocking_pool_submit(blocking_pool *p, blocking_job *job) {
    pthread_mutex_lock(&p->mu);
    /* Only start a thread when every running one is busy. */
    if (p->idle <= p->nqueued && p->nthreads < p->max_threads) {
        int rc = start_thread(p);
        if (rc < 0 && p->nthreads == 0) {
            pthread_mutex_unlock(&p->mu);
            return -EAGAIN;
        }
    }
    job->next = NULL;
    if (p->queue_tail)
        p->queue_tail->next = job;
    else
        p->queue_head = job;
    p->queue_tail = job;
    p->nqueued++;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

blocking_job *blocking_pool_take_done(blocking_pool *p) {
    uint64_t n;
    ssize_t r = read(p->efd, &n, sizeof n);
    (void)r; /* EAGAIN just means another call already took them */
    pthread_mutex_lock(&p->mu);
    blocking_job *list = p->done;
    p->done = NULL;
    pthread_mutex_unlock(&p->mu);
    return list;
}

void blocking_pool_destroy(blocking_pool *p) {
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->mu);
    close(p->efd);
    free(p);
}
