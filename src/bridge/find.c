/* SPDX-License-Identifier: MIT */
/* Finding the loaded object that defines a symbol, for both bridges. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "bridge.h"

#define MAX_OBJECTS 256

struct names {
	char name[MAX_OBJECTS][512];
	unsigned n;
};

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct names *f = arg;

	(void)size;
	/* The main program has the empty name: dlopen(NULL) below. */
	if (f->n < MAX_OBJECTS && info->dlpi_name)
		snprintf(f->name[f->n++], sizeof(f->name[0]), "%s",
			 info->dlpi_name);
	return 0;
}

void *rc_bridge_find_definer(const char *sym, void **addr)
{
	/* Big: not on the stack of an application thread. */
	static struct names f;
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	void *found = NULL;
	struct link_map *self = NULL;
	Dl_info me;

	dladdr1((void *)rc_bridge_find_definer, &me, (void **)&self,
		RTLD_DL_LINKMAP);
	pthread_mutex_lock(&lock);
	f.n = 0;
	/* Names first: dlopen inside dl_iterate_phdr's callback would take
	 * the loader's lock twice. */
	dl_iterate_phdr(collect, &f);
	for (unsigned i = 0; i < f.n; i++) {
		const char *name = f.name[i][0] ? f.name[i] : NULL;
		void *h = dlopen(name, RTLD_NOLOAD | RTLD_LAZY), *p;
		struct link_map *own = NULL, *in = NULL;
		Dl_info where;

		if (!h)
			continue;
		p = dlsym(h, sym);
		/* The object's own definition, not one that its handle sees
		 * through the global scope, and never the bridge's. */
		if (p && !dlinfo(h, RTLD_DI_LINKMAP, &own) &&
		    dladdr1(p, &where, (void **)&in, RTLD_DL_LINKMAP) &&
		    in == own && own != self) {
			*addr = p;
			found = h;	/* kept open: the object stays loaded */
			break;
		}
		dlclose(h);
	}
	pthread_mutex_unlock(&lock);
	return found;
}
