/*
 * Description: destroy deregisters everything, including regions a caller
 * still holds (cached or pass-through), and says so in a log line; nothing
 * stays registered.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

int main(void)
{
	size_t page = sysconf(_SC_PAGESIZE);
	struct regcache_region *r[3];
	struct regcache_stats st;
	struct t_registrar t;
	struct regcache *c;
	char *buf = t_map(8 * page);
	char log[4096] = "";
	int saved, fd;
	ssize_t n;

	t_registrar_init(&t, 16);
	c = t_registrar_cache(&t, REGCACHE_FLAG_EXPLICIT_INVALIDATE, 0, 0);
	for (int i = 0; i < 3; i++)
		T_EXPECT_EQ(0, regcache_get(c, buf + 2 * i * page, page, 0, &r[i]));
	regcache_put(c, r[1]);
	T_EXPECT_EQ(3, atomic_load(&t.live));

	/* Capture stderr around destroy. */
	fd = open("/tmp", O_TMPFILE | O_RDWR, 0600);
	T_REQUIRE(fd >= 0);
	saved = dup(2);
	dup2(fd, 2);
	regcache_destroy(c);
	dup2(saved, 2);
	n = pread(fd, log, sizeof(log) - 1, 0);
	T_REQUIRE(n >= 0);
	log[n] = 0;
	close(fd);

	T_EXPECT_EQ(0, atomic_load(&t.live));
	T_EXPECT_EQ(3, atomic_load(&t.deregs));
	T_CHECK(strstr(log, "2 regions were still held") != NULL);
	if (!strstr(log, "2 regions were still held"))
		fprintf(stderr, "log was: %s\n", log);

	/* Pass-through regions (no REGCACHE_FLAG_EXPLICIT_INVALIDATE under
	 * REGCACHE_MONITOR=none) held at destroy are deregistered too. */
	c = t_registrar_cache(&t, 0, 0, 0);
	T_EXPECT_EQ(0, regcache_get(c, buf, page, 0, &r[0]));
	T_EXPECT_EQ(0, regcache_get(c, buf + 2 * page, page, 0, &r[1]));
	regcache_get_stats(c, &st);
	T_EXPECT_EQ(2, st.uncached);
	T_EXPECT_EQ(2, atomic_load(&t.live));
	regcache_destroy(c);
	T_EXPECT_EQ(0, atomic_load(&t.live));
	t_registrar_fini(&t);
	return t_exit_status();
}
