/* The simplest Gen 1 client in C, as the S-function does it: a blocking
 * socket, answer every BeamNG message with id + 1 and NaN everywhere else.
 * For `beamconnect bench --responder`:
 *     cc -O2 -o responder examples/bench/responder.c
 *     ./responder LISTEN BEAMNG        (both IP:port)
 *     ./responder LISTEN BEAMNG spin   (busy-poll: non-blocking reads in a loop)
 */
#include <arpa/inet.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "addr.h"

int main(int argc, char **argv) {
	if (argc != 3 && !(argc == 4 && strcmp(argv[3], "spin") == 0)) {
		fprintf(stderr, "usage: %s LISTEN BEAMNG [spin]\n", argv[0]);
		return 2;
	}
	int flags = argc == 4 ? MSG_DONTWAIT : 0; /* spin: never sleep in recv */
	struct sockaddr_in listen = parse(argv[1]), beamng = parse(argv[2]);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&listen, sizeof listen) < 0) { perror("bind"); return 1; }
	double msg[111], reply[64];
	for (int i = 0; i < 64; i++) reply[i] = NAN;
	for (;;) {
		ssize_t n = recv(fd, msg, sizeof msg, flags);
		if (n != (ssize_t)sizeof msg) continue;
		reply[0] = msg[0] + 1; /* little-endian host, as BeamNG's */
		sendto(fd, reply, sizeof reply, 0, (struct sockaddr *)&beamng, sizeof beamng);
	}
}
