/* A BeamNG-like driver in C, for `beamconnect bench --c-driver`: it does
 * what BeamNG's coupling controller does in lockstep with no skip steps
 * (docs/protocol.md): send the 111-double state message with the next id, then wait
 * for the reply (64 doubles) before the next one, and time each wait.
 *     cc -O2 -o driver examples/bench/driver.c -lm
 *     ./driver LISTEN CLIENT SECONDS [spin]
 * LISTEN is BeamNG's receive address (it binds it), CLIENT the responder's.
 * It waits in a blocking recv with BeamNG's 2 s timeout, or with "spin" in a
 * loop of non-blocking ones. It prints one JSON object.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "addr.h"

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
	if (argc != 4 && !(argc == 5 && strcmp(argv[4], "spin") == 0)) {
		fprintf(stderr, "usage: %s LISTEN CLIENT SECONDS [spin]\n", argv[0]);
		return 2;
	}
	struct sockaddr_in listen = parse(argv[1]), client = parse(argv[2]);
	double seconds = atof(argv[3]);
	int spin = argc == 5;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&listen, sizeof listen) < 0) { perror("bind"); return 1; }
	struct timeval tv = {2, 0}; /* BeamNG's blocking timeout */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	double msg[111], reply[64];
	for (int i = 0; i < 111; i++) msg[i] = 0;
	size_t cap = 1 << 22, n = 0;
	double *waits = malloc(cap * sizeof *waits);
	long stalls = 0;
	double id = 0, start = now(), end = start + seconds;
	while (now() < end && n < cap) {
		msg[0] = id++;
		double t0 = now();
		sendto(fd, msg, sizeof msg, 0, (struct sockaddr *)&client, sizeof client);
		for (;;) {
			ssize_t got = recv(fd, reply, sizeof reply, spin ? MSG_DONTWAIT : 0);
			if (got == (ssize_t)sizeof reply && reply[0] > msg[0] - 0.5) break; /* the reply to this message */
			if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
				if (!spin) { stalls++; break; } /* 2 s passed: BeamNG gives up and sends on */
				if (now() - t0 > 2) { stalls++; break; }
			}
		}
		waits[n++] = now() - t0;
	}
	double elapsed = now() - start;
	qsort(waits, n, sizeof *waits, cmp);
	printf("{\"round_trips\": %zu, \"round_trips_per_s\": %.1f, \"turnaround_p50_us\": %.2f, \"turnaround_p99_us\": %.2f, \"turnaround_p999_us\": %.2f, \"stalls\": %ld}\n",
		n, n / elapsed, waits[n / 2] * 1e6, waits[(size_t)(n * 0.99)] * 1e6, waits[(size_t)(n * 0.999)] * 1e6, stalls);
	return 0;
}
