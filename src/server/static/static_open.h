/* static_open.h — opening a file strictly beneath a root directory fd:
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) where the kernel has it
 * (Linux 5.6+), else a component walk with openat(O_NOFOLLOW). */
#ifndef SPINDLE_STATIC_OPEN_H
#define SPINDLE_STATIC_OPEN_H

/* Whether openat2 works here (probed on root): 1, or 0 when the kernel (or
 * a seccomp filter) says ENOSYS or EPERM — then use the walk. */
int static_open_probe(int root);

/* Opens rel (relative, '/'-separated, no "." or ".." segment except a
 * lone ".", for the root itself) beneath root, read-only, non-blocking (a
 * FIFO cannot stall the loop), close-on-exec. With use_openat2, symlinks
 * are followed only while they stay beneath root (-EXDEV otherwise);
 * without it, the walk refuses every symlink (-ELOOP) and every "..": it
 * is stricter, never looser. Returns the fd or -errno. */
int static_open(int root, const char *rel, int use_openat2);

#endif
