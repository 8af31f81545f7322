/* make bench (part websocket): the floor under the control page's WebSocket traffic. One thread
 * accepts CLIENTS TCP connections on 127.0.0.1:PORT and every 50 ms writes each of them one
 * unmasked binary WebSocket frame of SIZE bytes (a 4-byte header and the payload, one writev, as
 * NIO writes a frame), with nothing else: no HTTP, no OSC, no router. Its CPU is what the kernel
 * costs the sender to deliver that many frames over loopback and wake the readers, which any
 * server sending the same frames pays.
 *
 * Usage: ws-floor PORT CLIENTS SIZE   (runs until killed)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: ws-floor PORT CLIENTS SIZE\n");
        return 2;
    }
    int port = atoi(argv[1]), clients = atoi(argv[2]), size = atoi(argv[3]), one = 1;
    if (clients < 1 || clients > 256 || size < 126 || size > 65535) {
        fprintf(stderr, "ws-floor: 1-256 clients, frames of 126-65535 bytes\n");
        return 2;
    }
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(listener, 64) != 0) {
        perror("ws-floor");
        return 1;
    }
    int fds[256];
    for (int i = 0; i < clients; i++) {
        fds[i] = accept(listener, NULL, NULL);
        if (fds[i] < 0) { perror("ws-floor: accept"); return 1; }
        setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    unsigned char header[4] = {0x82, 126, (unsigned char)(size >> 8), (unsigned char)(size & 255)};
    unsigned char *payload = calloc(1, (size_t)size);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (;;) {
        next.tv_nsec += 50000000;
        if (next.tv_nsec >= 1000000000) { next.tv_nsec -= 1000000000; next.tv_sec++; }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        for (int i = 0; i < clients; i++) {
            struct iovec parts[2] = {{header, sizeof header}, {payload, (size_t)size}};
            if (writev(fds[i], parts, 2) < 0) return 0;   /* a reader went: the run is over */
        }
    }
}
