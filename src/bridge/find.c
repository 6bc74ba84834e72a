/* SPDX-License-Identifier: MIT */
/* Finding the loaded object that defines a symbol, for both bridges. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
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

/* A dynamic-section address: glibc relocates most of them in place (x86_64
 * does), but not every loader does; an unrelocated one is below the load
 * base of a shared object. */
static uintptr_t dyn_ptr(const struct link_map *m, ElfW(Addr) p)
{
	return p < m->l_addr ? m->l_addr + p : p;
}

static bool relocs_name(const ElfW(Rela) *r, size_t bytes,
			const ElfW(Sym) *symtab, const char *strtab,
			const char *sym)
{
	for (size_t i = 0; i < bytes / sizeof(*r); i++) {
		size_t idx = ELF64_R_SYM(r[i].r_info);

		if (idx && !strcmp(strtab + symtab[idx].st_name, sym))
			return true;
	}
	return false;
}

bool rc_bridge_imports(void *handle, const char *sym)
{
	struct link_map *m = NULL;
	const ElfW(Rela) *rela = NULL, *jmprel = NULL;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	size_t relasz = 0, pltrelsz = 0;

	if (dlinfo(handle, RTLD_DI_LINKMAP, &m) || !m || !m->l_ld)
		return false;
	for (const ElfW(Dyn) *d = m->l_ld; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB: symtab = (void *)dyn_ptr(m, d->d_un.d_ptr); break;
		case DT_STRTAB: strtab = (void *)dyn_ptr(m, d->d_un.d_ptr); break;
		case DT_RELA: rela = (void *)dyn_ptr(m, d->d_un.d_ptr); break;
		case DT_RELASZ: relasz = d->d_un.d_val; break;
		case DT_JMPREL: jmprel = (void *)dyn_ptr(m, d->d_un.d_ptr); break;
		case DT_PLTRELSZ: pltrelsz = d->d_un.d_val; break;
		}
	}
	if (!symtab || !strtab)
		return false;
	return (jmprel && relocs_name(jmprel, pltrelsz, symtab, strtab, sym)) ||
	       (rela && relocs_name(rela, relasz, symtab, strtab, sym));
}

struct text_ctx {
	uintptr_t base;
	uintptr_t start, end;
};

static int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct text_ctx *t = arg;

	(void)size;
	if (info->dlpi_addr != t->base)
		return 0;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];

		if (p->p_type == PT_LOAD && (p->p_flags & PF_X)) {
			t->start = info->dlpi_addr + p->p_vaddr;
			t->end = t->start + p->p_memsz;
			return 1;
		}
	}
	return 0;
}

bool rc_bridge_text(void *handle, uintptr_t *start, uintptr_t *end)
{
	struct link_map *m = NULL;
	struct text_ctx t = { 0 };

	if (dlinfo(handle, RTLD_DI_LINKMAP, &m) || !m)
		return false;
	t.base = m->l_addr;
	if (!dl_iterate_phdr(find_text, &t))
		return false;
	*start = t.start;
	*end = t.end;
	return true;
}
