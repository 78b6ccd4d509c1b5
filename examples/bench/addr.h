/* IP:port parsing shared by the bench's C programs (responder.c, driver.c). */
#ifndef BENCH_ADDR_H
#define BENCH_ADDR_H

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct sockaddr_in parse(const char *s) {
	struct sockaddr_in a = {0};
	char host[64];
	const char *colon = strrchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : 0;
	if (!colon || n >= sizeof host) { fprintf(stderr, "expected IP:port, got %s\n", s); exit(2); }
	memcpy(host, s, n); host[n] = 0;
	a.sin_family = AF_INET;
	a.sin_port = htons((unsigned short)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &a.sin_addr) != 1) { fprintf(stderr, "bad IP %s\n", host); exit(2); }
	return a;
}

#endif
