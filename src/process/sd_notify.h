/* sd_notify.h — telling systemd (or any supervisor that sets
 * NOTIFY_SOCKET) about readiness, reloads and stops, per the documented
 * sd_notify datagram protocol; a no-op without NOTIFY_SOCKET. */
#ifndef SPINDLE_SD_NOTIFY_H
#define SPINDLE_SD_NOTIFY_H

/* Sends text ("READY=1", "MAINPID=123\nREADY=1", ...). 0, or -errno. */
int sd_notify_send(const char *text);

#endif
