/* listen_fds.h — listening sockets handed over at start: by systemd socket
 * activation (LISTEN_FDS/LISTEN_PID, fds from 3) or by the previous master
 * during a binary upgrade (SPINDLE_LISTEN_FDS="3,4"). */
#ifndef SPINDLE_LISTEN_FDS_H
#define SPINDLE_LISTEN_FDS_H

#define LISTEN_FDS_MAX 16

/* Fills fds with the inherited listening sockets (made close-on-exec) and
 * clears the variables so children do not see them. Returns the count; sets
 * *from_systemd when they came from socket activation. */
int listen_fds_inherited(int *fds, int max, int *from_systemd);

#endif
