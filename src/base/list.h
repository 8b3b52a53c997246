/* list.h — the one intrusive doubly linked list: a node embedded in the
 * element, a head and tail in the owner, NULL at both ends, O(1) append,
 * prepend and unlink. Used by the loop's task list, the wait queues and the
 * WebSocket registry; container_of gets the element back from its node. */
#ifndef SPINDLE_LIST_H
#define SPINDLE_LIST_H

#include <stddef.h>

#define container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

typedef struct list_node {
    struct list_node *prev, *next;
} list_node;

typedef struct list_head {
    list_node *head, *tail;
} list_head;

static inline int list_empty(const list_head *l) {
    return l->head == NULL;
}

static inline void list_push_back(list_head *l, list_node *n) {
    n->next = NULL;
    n->prev = l->tail;
    if (l->tail)
        l->tail->next = n;
    else
        l->head = n;
    l->tail = n;
}

static inline void list_push_front(list_head *l, list_node *n) {
    n->prev = NULL;
    n->next = l->head;
    if (l->head)
        l->head->prev = n;
    else
        l->tail = n;
    l->head = n;
}

static inline void list_remove(list_head *l, list_node *n) {
    if (n->prev)
        n->prev->next = n->next;
    else
        l->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        l->tail = n->prev;
    n->prev = n->next = NULL;
}

static inline list_node *list_pop_front(list_head *l) {
    list_node *n = l->head;
    if (n)
        list_remove(l, n);
    return n;
}

#endif
