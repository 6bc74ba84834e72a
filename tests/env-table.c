/* SPDX-License-Identifier: MIT */
/*
 * env-table: every environment variable regcache reads is in the table of
 * src/base/env.c, is read only through its accessors, and README.md's
 * configuration table is that table.
 *
 *   env-table SRCDIR      the test: the accessors, then SRCDIR's src/ and
 *                         tools/ and README.md, then the negative control
 *   env-table --markdown  README.md's rows, printed from the table
 *
 * The scan of a tree (its src/ and tools/) reports, in C files:
 *  - a REGCACHE_* name in a string literal that is neither in the table nor
 *    an identifier of the public headers or a CMake option (a name can only
 *    be read by spelling it somewhere, whatever reads it: getenv(),
 *    secure_getenv(), a walk of environ, a helper given the name);
 *  - getenv() or secure_getenv() outside src/base/env.c of a REGCACHE_* literal
 *    (it must go through an accessor) or of anything but a literal (the
 *    name cannot be checked);
 *  - environ outside src/base/env.c;
 * and in shell scripts (.in, .sh) and CMake files, $REGCACHE_X, ${REGCACHE_X
 * or $ENV{REGCACHE_X} of a name not in the table.
 * Negative control: the fixture tree tests/env-fixture has one of each
 * problem (and one foreign getenv and a name in a comment, which are not);
 * the scan must report exactly those, and the fixture's README table,
 * which lacks the table's rows, must be found to differ.
 */
#include <ftw.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/env.h"
#include "base/log.h"

#define README_BEGIN "<!-- env-table: the rows are `env-table --markdown` " \
		     "(tests/env-table.c checks them) -->\n"
#define README_END "<!-- end of env-table -->\n"

static int failures;

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("FAIL: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	failures++;
}

/* ---------------------------------------------------------------------
 * README.md's rows
 * ------------------------------------------------------------------- */

static const char *type_cell(const struct rc_env *e, char *buf, size_t n)
{
	size_t used = 0;

	switch (e->type) {
	case RC_ENV_FLAG:
		return "flag: on when set, whatever the value";
	case RC_ENV_BOOL:
		return "`1` or `0`";
	case RC_ENV_SIZE:
		return "number > 0, optional `K`, `M`, `G`";
	case RC_ENV_MS:
		return "milliseconds";
	case RC_ENV_US:
		return "microseconds";
	case RC_ENV_STRING:
		return "text";
	case RC_ENV_CHOICE:
		buf[0] = 0;
		for (int i = 0; e->choices[i] && used < n; i++)
			used += snprintf(buf + used, n - used, "%s`%s`",
					 i ? ", " : "", e->choices[i]);
		return buf;
	}
	return "?";
}

/* The rows, header included, as README.md has them between the markers. */
static char *markdown(void)
{
	char *out = NULL, type[160];
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	fputs("| variable | type | default | read by | meaning |\n"
	      "|---|---|---|---|---|\n", f);
	for (int i = 0; i < RC_ENV_COUNT; i++) {
		const struct rc_env *e = &rc_env_table[i];

		fprintf(f, "| `%s` | %s | %s | %s | %s |\n", e->name,
			type_cell(e, type, sizeof(type)), e->def, e->component,
			e->meaning);
	}
	fclose(f);
	return out;
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, n + 1);
	if (text && fread(text, 1, n, f) != (size_t)n) {
		free(text);
		text = NULL;
	}
	fclose(f);
	return text;
}

/* 0 when @path's table is the table; else prints which rows differ. */
static int readme_differs(const char *path, char *report, size_t n)
{
	char *text = read_text(path), *want = markdown(), *begin, *end;
	size_t used = 0;
	int bad = 0;

	report[0] = 0;
	if (!text || !(begin = strstr(text, README_BEGIN)) ||
	    !(end = strstr(begin, README_END))) {
		snprintf(report, n, "%s: no table between \"%.40s...\" and "
			 "\"%.24s...\"", path, README_BEGIN, README_END);
		free(text);
		free(want);
		return 1;
	}
	begin += strlen(README_BEGIN);
	*end = 0;
	/* Each line one way, then the other: which rows are missing or
	 * stale, and which should not be there. */
	for (int pass = 0; pass < 2; pass++) {
		char *from = pass ? begin : want, *in = pass ? want : begin;

		for (char *l = from, *nl; *l; l = nl + 1) {
			bool present = false;

			nl = strchr(l, '\n');
			if (!nl)
				break;
			*nl = 0;
			for (char *m = in; (m = strstr(m, l)); m++)
				if ((m == in || m[-1] == '\n') &&
				    m[strlen(l)] == '\n') {
					present = true;
					break;
				}
			if (!present && used < n) {
				used += snprintf(report + used, n - used,
						 "%s: %s: %s\n", path,
						 pass ? "not in the table"
						      : "missing or stale",
						 l);
				bad++;
			}
			*nl = '\n';
		}
	}
	if (!bad && strcmp(begin, want)) {
		snprintf(report, n, "%s: the rows are in another order\n",
			 path);
		bad = 1;
	}
	free(text);
	free(want);
	return bad;
}

/* ---------------------------------------------------------------------
 * The scan of a tree
 * ------------------------------------------------------------------- */

static const char *scan_root;
static char *allowed;	/* "\nNAME\n" for each API identifier and option */
static size_t allowed_len;
static FILE *allowed_f;
/* What the scan reported, for the negative control. */
static char *found;
static size_t found_len;
static FILE *found_f;
static int problems;

static void problem(const char *path, int line, const char *fmt, ...)
{
	va_list ap;

	printf("%s:%d: ", path + strlen(scan_root) + 1, line);
	fprintf(found_f, "%s:%d: ", path + strlen(scan_root) + 1, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	va_start(ap, fmt);
	vfprintf(found_f, fmt, ap);
	va_end(ap);
	putchar('\n');
	fputc('\n', found_f);
	problems++;
}

static bool is_ident(char c)
{
	return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9');
}

static bool in_table(const char *name, size_t len)
{
	for (int i = 0; i < RC_ENV_COUNT; i++)
		if (strlen(rc_env_table[i].name) == len &&
		    !memcmp(rc_env_table[i].name, name, len))
			return true;
	return false;
}

static bool is_allowed(const char *name, size_t len)
{
	char key[128];

	if (len + 3 > sizeof(key))
		return false;
	snprintf(key, sizeof(key), "\n%.*s\n", (int)len, name);
	return allowed && strstr(allowed, key);
}

static int line_of(const char *text, const char *p)
{
	int line = 1;

	for (; text < p; text++)
		line += *text == '\n';
	return line;
}

/*
 * @text with comments blanked (newlines kept) into @code, and with string
 * and character literals blanked too into @bare: names are looked for in
 * @code's literals, calls in @bare.
 */
static void split_c(const char *text, char *code, char *bare)
{
	size_t n = strlen(text);

	for (size_t i = 0; i < n;) {
		char c = text[i];

		if (c == '/' && text[i + 1] == '*') {
			for (; i < n && !(text[i] == '*' && text[i + 1] == '/');
			     i++)
				code[i] = bare[i] =
					text[i] == '\n' ? '\n' : ' ';
			if (i < n)
				code[i] = bare[i] = code[i + 1] = bare[i + 1] =
					' ', i += 2;
		} else if (c == '/' && text[i + 1] == '/') {
			for (; i < n && text[i] != '\n'; i++)
				code[i] = bare[i] = ' ';
		} else if (c == '"' || c == '\'') {
			code[i] = bare[i] = c;
			for (i++; i < n && text[i] != c && text[i] != '\n';
			     i++) {
				if (text[i] == '\\' && i + 1 < n) {
					code[i] = text[i];
					bare[i++] = ' ';
				}
				code[i] = text[i];
				bare[i] = ' ';
			}
			if (i < n)
				code[i] = bare[i] = text[i], i++;
		} else {
			code[i] = bare[i] = c, i++;
		}
	}
	code[n] = bare[n] = 0;
}

static bool is_env_c(const char *path)
{
	size_t n = strlen(path);

	return n >= 15 && !strcmp(path + n - 15, "/src/base/env.c");
}

static void scan_c(const char *path, const char *text)
{
	size_t n = strlen(text);
	char *code = malloc(n + 1), *bare = malloc(n + 1);

	split_c(text, code, bare);
	/* Names in literals: where @bare is blank and @code is not. */
	for (size_t i = 0; i < n; i++) {
		size_t len;

		if (bare[i] != ' ' || strncmp(code + i, "REGCACHE_", 9) ||
		    (i && is_ident(code[i - 1])))
			continue;
		for (len = 9; is_ident(code[i + len]); len++)
			;
		if (!in_table(code + i, len) && !is_allowed(code + i, len))
			problem(path, line_of(text, text + i),
				"%.*s is not in the table of src/base/env.c",
				(int)len, code + i);
		i += len;
	}
	/* Calls, in @bare; their argument from @code. */
	for (const char *p = bare; (p = strstr(p, "environ")); p += 7)
		if ((p == bare || !is_ident(p[-1])) && !is_ident(p[7]) &&
		    !is_env_c(path))
			problem(path, line_of(bare, p),
				"environ read outside src/base/env.c");
	for (const char *p = bare; (p = strstr(p, "getenv")); p += 6) {
		const char *a, *close;
		size_t at;

		if ((p > bare && is_ident(p[-1]) &&
		     !(p - bare >= 7 && !strncmp(p - 7, "secure_", 7) &&
		       (p - bare == 7 || !is_ident(p[-8])))) ||
		    is_ident(p[6]) || is_env_c(path))
			continue;
		for (a = p + 6; *a == ' ' || *a == '\t' || *a == '\n'; a++)
			;
		if (*a != '(')
			continue;
		for (a++; *a == ' ' || *a == '\t' || *a == '\n'; a++)
			;
		at = a - bare;
		close = code[at] == '"' ? strchr(code + at + 1, '"') : NULL;
		if (close) {
			const char *after = close + 1;

			while (*after == ' ' || *after == '\t')
				after++;
			if (*after != ')')
				close = NULL;
		}
		if (!close)
			problem(path, line_of(bare, p),
				"getenv() of something other than a literal: "
				"use the table's accessors (src/base/env.h)");
		else if (!strncmp(code + at + 1, "REGCACHE_", 9))
			problem(path, line_of(bare, p),
				"getenv(%.*s) outside src/base/env.c: use the "
				"table's accessors (src/base/env.h)",
				(int)(close - (code + at) + 1), code + at);
	}
	free(code);
	free(bare);
}

/* Shell: $REGCACHE_X, ${REGCACHE_X...; CMake (where ${X} is a CMake
 * variable): $ENV{REGCACHE_X}. */
static void scan_script(const char *path, const char *text, bool cmake)
{
	for (const char *p = text; (p = strstr(p, "REGCACHE_")); p++) {
		bool env = p - text >= 5 && !strncmp(p - 5, "$ENV{", 5);
		bool dollar = (p > text && p[-1] == '$') ||
			      (p - text >= 2 && !strncmp(p - 2, "${", 2));
		size_t len;

		if (cmake ? !env : !dollar)
			continue;
		for (len = 9; is_ident(p[len]); len++)
			;
		if (!in_table(p, len))
			problem(path, line_of(text, p),
				"%.*s is not in the table of src/base/env.c",
				(int)len, p);
	}
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && !strcmp(s + n - t, tail);
}

static int visit(const char *path, const struct stat *st, int type,
		 struct FTW *ftw)
{
	char *text;

	(void)st;
	(void)ftw;
	if (type != FTW_F)
		return 0;
	if (ends_with(path, ".c") || ends_with(path, ".h")) {
		if ((text = read_text(path)))
			scan_c(path, text);
	} else if (ends_with(path, ".in") || ends_with(path, ".sh") ||
		   ends_with(path, ".cmake") ||
		   ends_with(path, "CMakeLists.txt")) {
		if ((text = read_text(path)))
			scan_script(path, text, !ends_with(path, ".in") &&
						!ends_with(path, ".sh"));
	} else {
		return 0;
	}
	free(text);
	return 0;
}

/* Every identifier REGCACHE_* of a public header outside comments and
 * literals (macros, enumerators), or every option(REGCACHE_* of a CMake
 * file: names that are not environment variables. */
static int collect_allowed(const char *path, const struct stat *st, int type,
			   struct FTW *ftw)
{
	bool header = ends_with(path, ".h") && strstr(path, "/include/");
	char *text, *code, *bare;
	const char *key = header ? "REGCACHE_" : "option(REGCACHE_";

	(void)st;
	(void)ftw;
	if (type != FTW_F || !(header || ends_with(path, ".cmake") ||
			       ends_with(path, "CMakeLists.txt")))
		return 0;
	if (!(text = read_text(path)))
		return 0;
	code = malloc(strlen(text) + 1);
	bare = malloc(strlen(text) + 1);
	split_c(text, code, bare);
	for (const char *p = header ? bare : text; (p = strstr(p, key)); p++) {
		const char *name = p + strlen(key) - 9;
		size_t len;

		if (header && p > bare && is_ident(p[-1]))
			continue;
		for (len = 9; is_ident(name[len]); len++)
			;
		fprintf(allowed_f, "%.*s\n", (int)len, name);
	}
	free(code);
	free(bare);
	free(text);
	return 0;
}

/* Problems in @root's src/ and tools/; their text in found. */
static int scan_tree(const char *root)
{
	char dir[4096];

	scan_root = root;
	free(allowed);
	allowed = NULL;
	allowed_f = open_memstream(&allowed, &allowed_len);
	fputc('\n', allowed_f);
	for (int i = 0; i < 5; i++) {
		static const char *const where[] = { "include", "cmake", "src",
						     "tools",
						     "CMakeLists.txt" };

		snprintf(dir, sizeof(dir), "%s/%s", root, where[i]);
		if (!access(dir, R_OK))
			nftw(dir, collect_allowed, 16, FTW_PHYS);
	}
	fclose(allowed_f);

	problems = 0;
	free(found);
	found = NULL;
	found_f = open_memstream(&found, &found_len);
	snprintf(dir, sizeof(dir), "%s/src", root);
	nftw(dir, visit, 16, FTW_PHYS);
	snprintf(dir, sizeof(dir), "%s/tools", root);
	nftw(dir, visit, 16, FTW_PHYS);
	fclose(found_f);
	return problems;
}

/* ---------------------------------------------------------------------
 * The table and its accessors
 * ------------------------------------------------------------------- */

/* The log lines @call prints, read back from a memfd put on stderr. */
#define CAPTURE(buf, call)                                                   \
	do {                                                                 \
		int fd_ = memfd_create("stderr", 0), saved_ = dup(2);        \
		ssize_t n_;                                                  \
		dup2(fd_, 2);                                                \
		call;                                                        \
		dup2(saved_, 2);                                             \
		close(saved_);                                               \
		n_ = pread(fd_, buf, sizeof(buf) - 1, 0);                    \
		buf[n_ > 0 ? n_ : 0] = 0;                                    \
		close(fd_);                                                  \
	} while (0)

static void expect_log(const char *log, const char *want, const char *what)
{
	if (want && !strstr(log, want))
		fail("%s: no log line with \"%s\" (got \"%s\")", what, want,
		     log);
	if (!want && log[0])
		fail("%s: logged \"%s\"", what, log);
}

static void check_table(void)
{
	for (int i = 0; i < RC_ENV_COUNT; i++) {
		const struct rc_env *e = &rc_env_table[i];
		const char *cells[] = { e->def, e->component, e->meaning };

		if (!e->name || strncmp(e->name, "REGCACHE_", 9)) {
			fail("entry %d has no REGCACHE_ name", i);
			continue;
		}
		if (i && strcmp(rc_env_table[i - 1].name, e->name) >= 0)
			fail("%s: the table is not sorted by name", e->name);
		for (int c = 0; c < 3; c++)
			if (!cells[c] || !cells[c][0] ||
			    strpbrk(cells[c], "|\n"))
				fail("%s: a cell is empty, or has | or a "
				     "newline", e->name);
		if ((e->type == RC_ENV_CHOICE) != (e->choices != NULL))
			fail("%s: choices without RC_ENV_CHOICE or the other "
			     "way", e->name);
		if (e->type == RC_ENV_CHOICE) {
			int n = 0;

			while (e->choices[n])
				n++;
			if (e->def_value < -1 || e->def_value >= n)
				fail("%s: the default is not a choice",
				     e->name);
		}
	}
	/* log.c's levels are the choices of REGCACHE_LOG, in order. */
	if (strcmp(rc_env_choice_name(RC_ENV_LOG, RC_LOG_ERROR), "error") ||
	    strcmp(rc_env_choice_name(RC_ENV_LOG, RC_LOG_INFO), "info") ||
	    strcmp(rc_env_choice_name(RC_ENV_LOG, RC_LOG_DEBUG), "debug") ||
	    rc_env_table[RC_ENV_LOG].def_value != RC_LOG_WARN)
		fail("REGCACHE_LOG's choices are not log.c's levels");
}

static void check_accessors(void)
{
	char log[1024];
	bool set;
	long long t;
	size_t z;
	int i;

	/* Flags: set is on, even "0", which is said. */
	unsetenv("REGCACHE_UFFD_WP_PROBE");
	if (rc_env_flag(RC_ENV_UFFD_WP_PROBE))
		fail("an unset flag is on");
	setenv("REGCACHE_UFFD_WP_PROBE", "", 1);
	if (!rc_env_flag(RC_ENV_UFFD_WP_PROBE))
		fail("a flag set empty is off");
	setenv("REGCACHE_UFFD_WP_PROBE", "0", 1);
	CAPTURE(log, i = rc_env_flag(RC_ENV_UFFD_WP_PROBE));
	if (!i)
		fail("a flag set to 0 is off");
	expect_log(log, "REGCACHE_UFFD_WP_PROBE=0 turns it on", "flag 0");
	unsetenv("REGCACHE_UFFD_WP_PROBE");

	/* Booleans: the default when unset or malformed. */
	unsetenv("REGCACHE_FABRIC_IMPORT");
	if (!rc_env_bool(RC_ENV_FABRIC_IMPORT))
		fail("REGCACHE_FABRIC_IMPORT unset is not its default 1");
	setenv("REGCACHE_FABRIC_IMPORT", "0", 1);
	if (rc_env_bool(RC_ENV_FABRIC_IMPORT))
		fail("REGCACHE_FABRIC_IMPORT=0 is on");
	setenv("REGCACHE_FABRIC_IMPORT", "maybe", 1);
	CAPTURE(log, i = rc_env_bool(RC_ENV_FABRIC_IMPORT));
	if (!i)
		fail("REGCACHE_FABRIC_IMPORT=maybe is not the default");
	expect_log(log, "ignoring REGCACHE_FABRIC_IMPORT=maybe", "bool");
	setenv("REGCACHE_UCX_THREAD", "1", 1);
	if (!rc_env_bool(RC_ENV_UCX_THREAD))
		fail("REGCACHE_UCX_THREAD=1 is off");
	unsetenv("REGCACHE_UCX_THREAD");
	unsetenv("REGCACHE_FABRIC_IMPORT");

	/* Sizes: 0 when unset or malformed, the caller's default then. */
	setenv("REGCACHE_MAX_BYTES", "64K", 1);
	if ((z = rc_env_size(RC_ENV_MAX_BYTES)) != 65536)
		fail("REGCACHE_MAX_BYTES=64K is %zu", z);
	setenv("REGCACHE_MAX_BYTES", "0x10", 1);
	if ((z = rc_env_size(RC_ENV_MAX_BYTES)) != 16)
		fail("REGCACHE_MAX_BYTES=0x10 is %zu", z);
	static const char *const bad_sizes[] = { "12Q", "0", "-1",
						 "99999999999999999999" };
	for (unsigned k = 0; k < 4; k++) {
		setenv("REGCACHE_MAX_BYTES", bad_sizes[k], 1);
		CAPTURE(log, z = rc_env_size(RC_ENV_MAX_BYTES));
		if (z)
			fail("REGCACHE_MAX_BYTES=%s is %zu", bad_sizes[k], z);
		expect_log(log, "ignoring REGCACHE_MAX_BYTES=", bad_sizes[k]);
	}
	unsetenv("REGCACHE_MAX_BYTES");

	/* Times: the table's default when unset or malformed. */
	unsetenv("REGCACHE_REGCACHED_FALLBACK_MS");
	if (rc_env_time(RC_ENV_REGCACHED_FALLBACK_MS, &set) != 5000 || set)
		fail("REGCACHE_REGCACHED_FALLBACK_MS unset is not 5000");
	setenv("REGCACHE_REGCACHED_FALLBACK_MS", "0", 1);
	if (rc_env_time(RC_ENV_REGCACHED_FALLBACK_MS, &set) != 0 || !set)
		fail("REGCACHE_REGCACHED_FALLBACK_MS=0 is not 0");
	setenv("REGCACHE_REGCACHED_FALLBACK_MS", "5s", 1);
	CAPTURE(log, t = rc_env_time(RC_ENV_REGCACHED_FALLBACK_MS, &set));
	if (t != 5000 || set)
		fail("REGCACHE_REGCACHED_FALLBACK_MS=5s is %lld", t);
	expect_log(log, "ignoring REGCACHE_REGCACHED_FALLBACK_MS=5s", "ms");
	setenv("REGCACHE_UCX_LINGER_US", "-3", 1);
	CAPTURE(log, t = rc_env_time(RC_ENV_UCX_LINGER_US, NULL));
	if (t != 2000)
		fail("REGCACHE_UCX_LINGER_US=-3 is %lld", t);
	expect_log(log, "microseconds", "us");
	unsetenv("REGCACHE_UCX_LINGER_US");
	unsetenv("REGCACHE_REGCACHED_FALLBACK_MS");

	/* Choices: the default, or the caller's (-1); strict ones refuse. */
	setenv("REGCACHE_LOG", "info", 1);
	if (rc_env_choice(RC_ENV_LOG) != RC_LOG_INFO)
		fail("REGCACHE_LOG=info is not info");
	setenv("REGCACHE_LOG", "loud", 1);
	CAPTURE(log, i = rc_env_choice(RC_ENV_LOG));
	if (i != RC_LOG_WARN)
		fail("REGCACHE_LOG=loud is not warn");
	expect_log(log, "ignoring REGCACHE_LOG=loud: expected one of error, "
		   "warn, info, debug", "choice");
	unsetenv("REGCACHE_LOG");
	unsetenv("REGCACHE_VERBS_ODP");
	if (rc_env_choice(RC_ENV_VERBS_ODP) != -1)
		fail("REGCACHE_VERBS_ODP unset does not leave it to the "
		     "caller");
	setenv("REGCACHE_VERBS_ODP", "implicit", 1);
	if (strcmp(rc_env_choice_name(RC_ENV_VERBS_ODP,
				      rc_env_choice(RC_ENV_VERBS_ODP)),
		   "implicit"))
		fail("REGCACHE_VERBS_ODP=implicit is not implicit");
	unsetenv("REGCACHE_VERBS_ODP");
	setenv("REGCACHE_BPF_ATTACH", "bogus", 1);
	CAPTURE(log, i = rc_env_choice_strict(RC_ENV_BPF_ATTACH));
	if (i != -1)
		fail("REGCACHE_BPF_ATTACH=bogus is not refused");
	expect_log(log, NULL, "strict choice");
	setenv("REGCACHE_BPF_ATTACH", "", 1);
	if (rc_env_choice_strict(RC_ENV_BPF_ATTACH) != 0)
		fail("REGCACHE_BPF_ATTACH empty is not auto");
	unsetenv("REGCACHE_BPF_ATTACH");

	/* Text: empty is unset. */
	setenv("REGCACHE_SOCKET", "", 1);
	if (rc_env_str(RC_ENV_SOCKET))
		fail("REGCACHE_SOCKET empty is set");
	setenv("REGCACHE_SOCKET", "/x", 1);
	if (!rc_env_str(RC_ENV_SOCKET) ||
	    strcmp(rc_env_str(RC_ENV_SOCKET), "/x"))
		fail("REGCACHE_SOCKET=/x is not /x");
	unsetenv("REGCACHE_SOCKET");
}

/* The fixture: each problem once, found exactly. */
static void check_negative_control(const char *srcdir)
{
	static const char *const want[] = {
		"src/unlisted.c:6: REGCACHE_NOT_IN_TABLE is not in the table",
		"src/unlisted.c:6: getenv(\"REGCACHE_NOT_IN_TABLE\") outside",
		"src/unlisted.c:11: getenv() of something other than a literal",
		"src/unlisted.c:17: getenv(\"REGCACHE_LOG\") outside",
		"src/unlisted.c:20: REGCACHE_READ_BY_PREFIX_ is not in the "
		"table",
		"src/unlisted.c:22: environ read outside src/base/env.c",
		"tools/run.in:3: REGCACHE_UNLISTED_DIR is not in the table",
	};
	const size_t n_want = sizeof(want) / sizeof(want[0]);
	char root[4096], report[8192];
	int n;

	snprintf(root, sizeof(root), "%s/tests/env-fixture", srcdir);
	printf("negative control: the scan of %s must find %zu problems:\n",
	       root, n_want);
	n = scan_tree(root);
	for (size_t i = 0; i < n_want; i++)
		if (!strstr(found, want[i]))
			fail("the fixture's \"%s\" was not found", want[i]);
	if ((size_t)n != n_want)
		fail("the fixture has %zu problems, the scan found %d", n_want,
		     n);
	snprintf(root, sizeof(root), "%s/tests/env-fixture/README.md", srcdir);
	if (!readme_differs(root, report, sizeof(report)))
		fail("the fixture's README table was found to be the table");
	else if (!strstr(report,
			 "not in the table: | `REGCACHE_NOT_IN_TABLE`") ||
		 !strstr(report, "missing or stale: | `REGCACHE_LOG`"))
		fail("the fixture's README: a row not reported:\n%s", report);
}

int main(int argc, char **argv)
{
	char path[4096], report[16384];
	char *rows;

	if (argc == 2 && !strcmp(argv[1], "--markdown")) {
		rows = markdown();
		fputs(rows, stdout);
		free(rows);
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: %s SRCDIR | --markdown\n", argv[0]);
		return 2;
	}
	/* Warnings on, whatever the caller's environment says. */
	setenv("REGCACHE_LOG", "warn", 1);
	if (rc_log_level() != RC_LOG_WARN)
		fail("REGCACHE_LOG=warn is not warn");
	check_table();
	check_accessors();

	printf("the scan of %s:\n", argv[1]);
	if (scan_tree(argv[1]))
		fail("%d reads of the environment outside the table (above)",
		     problems);
	snprintf(path, sizeof(path), "%s/README.md", argv[1]);
	if (readme_differs(path, report, sizeof(report)))
		fail("README.md's table is not the table (env-table --markdown "
		     "prints it):\n%s", report);

	check_negative_control(argv[1]);
	if (failures) {
		printf("%d failures\n", failures);
		return 1;
	}
	printf("ok: %d variables, README.md agrees, the fixture's problems "
	       "were all found\n", RC_ENV_COUNT);
	return 0;
}
