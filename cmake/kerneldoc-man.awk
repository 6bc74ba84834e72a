# SPDX-License-Identifier: MIT
#
# kerneldoc-man.awk: man pages from the kernel-doc comments of the public
# headers, which are the reference (the pages are never edited by hand).
#
#   awk -v outdir=DIR -v version=X.Y.Z -f kerneldoc-man.awk include/regcache.h ...
#
# Writes DIR/<function>.3 for every documented function and DIR/regcache.3:
# the overview (the header's introduction, every call by group, the
# structures and the constants). Fails, writing nothing, when a function is
# declared without a kernel-doc comment or under another name than the one
# its comment documents, so every public call has a page.
#
# The comments it reads look like this (rdma-core, the kernel):
#   /**
#    * name - one-line summary          (or "struct name - ...", "MACRO - ...")
#    * @arg: what it is, continued on
#    *       indented lines
#    *
#    * Paragraphs of description.
#    *
#    * Return: ...            Context: ...          (sections, to the end)
#    */
#   declaration;
# A plain comment whose first line is dashes is a banner that groups the
# calls after it; a file's first plain comment is its introduction.
# Portable awk (mawk, gawk, busybox): no gensub, no \< \>, no arrays of arrays.

function fail(msg) {
	printf("%s:%d: %s\n", FILENAME, FNR, msg) > "/dev/stderr"
	failed = 1
	exit 1
}

function trim(s) {
	sub(/^[ \t]+/, "", s)
	sub(/[ \t]+$/, "", s)
	return s
}

# troff-safe text with the kernel-doc markup turned into fonts:
# @arg -> italic, name() -> bold, -EINVAL -> \-EINVAL (a real minus sign).
function fmt(s,    out, m) {
	gsub(/\\/, "\\e", s)
	out = ""
	while (match(s, /@[A-Za-z_][A-Za-z0-9_]*|[A-Za-z_][A-Za-z0-9_]*\(\)|-E[A-Z0-9]+/)) {
		m = substr(s, RSTART, RLENGTH)
		out = out substr(s, 1, RSTART - 1)
		if (m ~ /^@/)
			out = out "\\fI" substr(m, 2) "\\fP"
		else if (m ~ /\(\)$/)
			out = out "\\fB" substr(m, 1, length(m) - 2) "\\fP()"
		else
			out = out "\\-" substr(m, 2)
		s = substr(s, RSTART + RLENGTH)
	}
	out = out s
	if (out ~ /^[.']/)
		out = "\\&" out
	return out
}

# Text of several comment lines ("\n"-separated, blank = paragraph break) as
# troff: paragraphs, and "- item" lines as bullets.
function body(text,    n, i, lines, l, out, inlist) {
	n = split(text, lines, "\n")
	out = ""
	inlist = 0
	for (i = 1; i <= n; i++) {
		l = trim(lines[i])
		if (l == "") {
			if (out != "" && out !~ /\.PP\n$/)
				out = out ".PP\n"
			inlist = 0
			continue
		}
		if (l ~ /^- /) {
			out = out ".IP \\(bu 2\n"
			l = substr(l, 3)
			inlist = 1
		}
		out = out fmt(l) "\n"
	}
	sub(/\.PP\n$/, "", out)
	return out
}

# "the cache" -> "The cache", but never "io_uring_prep_read_fixed()" or "mmap".
function capitalize(s,    w) {
	w = s
	sub(/[ ,.;:].*/, "", w)
	if (w !~ /^[a-z][a-z-]*$/ || w == "mmap" || w == "munmap")
		return s
	return toupper(substr(s, 1, 1)) substr(s, 2)
}

function blank(s) {
	return s !~ /[^ \t\n]/
}

# The synopsis of a prototype: bold, with the argument names in italics.
function synopsis(i,    n, lines, k, j, l, p, re, out) {
	n = split(fproto[i], lines, "\n")
	out = ""
	for (k = 1; k <= n; k++) {
		l = lines[k]
		gsub(/\t/, "        ", l)
		for (j = 1; j <= fnparam[i]; j++) {
			p = pname[i, j]
			re = "[ *]" p "[,)[]"
			if (match(l, re))
				l = substr(l, 1, RSTART) "\\fI" p "\\fB" \
				    substr(l, RSTART + RLENGTH - 1)
		}
		out = out "\\fB" l "\\fP\n"
	}
	return out
}

# The page header; .nh and .ad l (ragged right): identifiers such as
# regcache_uring_create_slots() are neither hyphenated nor spread out.
function th(name) {
	return ".TH " name " 3 \"\" \"regcache " version "\" \"regcache manual\"\n.nh\n.ad l\n"
}

function generated(hdr) {
	return ".\\\" Generated from " hdr " by cmake/kerneldoc-man.awk: edit the header.\n"
}

# A section header inside a doc comment ("Return: ...").
function section_of(l) {
	if (l ~ /^(Return|Returns|Context|Note|Notes|Example):/)
		return 1
	return 0
}

# Parse the lines of one kernel-doc comment into the doc_* variables.
function parse_doc(text,    n, lines, i, l, state, cur, m) {
	n = split(text, lines, "\n")
	doc_name = ""
	doc_sum = ""
	doc_nparam = 0
	doc_nsec = 0
	doc_sec_name[0] = ""
	doc_sec_text[0] = ""
	l = trim(lines[1])
	if (!match(l, /^(struct )?[A-Za-z_][A-Za-z0-9_]* - /)) {
		# An unnamed comment ("Opaque. ...") documents what follows.
		doc_sum = trim(text)
		gsub(/[ \t]*\n[ \t]*/, " ", doc_sum)
		return
	}
	doc_name = substr(l, 1, RLENGTH - 3)
	doc_sum = substr(l, RLENGTH + 1)
	state = "summary"
	for (i = 2; i <= n; i++) {
		l = trim(lines[i])
		if (state == "summary" && l != "" && l !~ /^@/) {
			doc_sum = doc_sum " " l
			continue
		}
		if (state != "sections" && match(l, /^@[A-Za-z_][A-Za-z0-9_]*:/)) {
			doc_nparam++
			doc_pname[doc_nparam] = substr(l, 2, RLENGTH - 2)
			doc_ptext[doc_nparam] = trim(substr(l, RLENGTH + 1))
			state = "param"
			continue
		}
		if (state == "param" && l != "") {
			doc_ptext[doc_nparam] = doc_ptext[doc_nparam] " " l
			continue
		}
		if (section_of(l)) {
			doc_nsec++
			m = index(l, ":")
			doc_sec_name[doc_nsec] = substr(l, 1, m - 1)
			doc_sec_text[doc_nsec] = trim(substr(l, m + 1)) "\n"
			state = "sections"
			continue
		}
		if (state == "summary" || state == "param")
			state = "desc"
		doc_sec_text[doc_nsec] = doc_sec_text[doc_nsec] l "\n"
	}
}

# Strip the comment syntax from one line of a comment.
function comment_text(l) {
	sub(/^[ \t]*\/\*\*?/, "", l)
	sub(/\*\/[ \t]*$/, "", l)
	sub(/^[ \t]*\* ?/, "", l)
	return l
}

# A finished comment: a kernel-doc waits for its declaration; a plain one is
# a banner or the file's introduction.
function end_comment(    n, lines, i, t) {
	while (ctext ~ /^[ \t]*\n/)
		sub(/^[ \t]*\n/, "", ctext)
	if (ckdoc) {
		parse_doc(ctext)
		pending = 1
		decl = ""
		return
	}
	n = split(ctext, lines, "\n")
	t = trim(lines[1])
	if (t ~ /^-+$/) {
		banner = trim(lines[2])
		return
	}
	if (!(FILENAME in intro) && ctext !~ /^[ \t]*SPDX-License-Identifier/)
		intro[FILENAME] = ctext
}

# A declaration documented by the pending kernel-doc, complete in `decl`.
function end_decl(    i, j, name, n, lines) {
	pending = 0
	if (doc_name == "" ) {
		if (match(decl, /^struct [A-Za-z_][A-Za-z0-9_]*;/)) {
			nopaque++
			oname[nopaque] = substr(decl, 1, RLENGTH - 1)
			osum[nopaque] = doc_sum
		}
		return
	}
	# A documented typedef (a callback's type) is a type, listed with the
	# structures in regcache(3), not a call with a page of its own.
	if (doc_name ~ /^struct / || decl ~ /^typedef /) {
		ns++
		sname[ns] = doc_name
		ssum[ns] = doc_sum
		sdecl[ns] = decl
		snparam[ns] = doc_nparam
		for (j = 1; j <= doc_nparam; j++) {
			sm[ns, j] = doc_pname[j]
			smt[ns, j] = doc_ptext[j]
		}
		sdesc[ns] = doc_sec_text[0]
		return
	}
	if (doc_name ~ /^[A-Z][A-Z0-9_]*$/) {
		if (index(decl, "#define " doc_name) != 1)
			fail("the comment documents " doc_name " but the next declaration is: " decl)
		# One comment may document consecutive #defines (MAJOR, MINOR, ...).
		name = ""
		n = split(decl, lines, "\n")
		for (i = 1; i <= n; i++)
			if (match(lines[i], /^#define[ \t]+[A-Za-z_][A-Za-z0-9_]*/))
				name = name (name == "" ? "" : ", ") \
				       trim(substr(lines[i], 8, RLENGTH - 7))
		nm++
		mname[nm] = name
		msum[nm] = doc_sum
		mdesc[nm] = doc_sec_text[0]
		return
	}
	if (!match(decl, /[A-Za-z_][A-Za-z0-9_]*\(/))
		fail("the comment documents " doc_name "() but no prototype follows")
	name = substr(decl, RSTART, RLENGTH - 1)
	if (name != doc_name)
		fail("the comment documents " doc_name " but the prototype declares " name)
	if (name in page)
		fail(name " is documented twice")
	nf++
	page[name] = nf
	fname[nf] = name
	fsum[nf] = doc_sum
	fhdr[nf] = header
	fbanner[nf] = banner
	fproto[nf] = decl
	fnparam[nf] = doc_nparam
	for (j = 1; j <= doc_nparam; j++) {
		pname[nf, j] = doc_pname[j]
		ptext[nf, j] = doc_ptext[j]
	}
	fnsec[nf] = doc_nsec
	for (i = 0; i <= doc_nsec; i++) {
		fsecname[nf, i] = doc_sec_name[i]
		fsectext[nf, i] = doc_sec_text[i]
	}
}

FNR == 1 {
	if (pending && doc_name ~ /^[A-Z]/ && decl != "")
		end_decl()
	hdrs[++nhdrs] = FILENAME
	header = FILENAME
	sub(/.*include\//, "", header)
	banner = ""
	incomment = 0
	pending = 0
}

# Comments.
incomment || /^[ \t]*\/\*/ {
	if (pending && doc_name ~ /^[A-Z]/ && decl != "")
		end_decl()
	if (!incomment) {
		incomment = 1
		ckdoc = ($0 ~ /^[ \t]*\/\*\*/)
		ctext = ""
	}
	ctext = ctext comment_text($0) "\n"
	if ($0 ~ /\*\//) {
		incomment = 0
		end_comment()
	}
	next
}

# Declarations.
{
	line = $0
	if (pending && doc_name ~ /^[A-Z]/) {
		# A documented macro: its #define lines, with their continuations.
		if (line ~ /^#define/ || (decl != "" && decl ~ /\\$/)) {
			decl = decl (decl == "" ? "" : "\n") line
			next
		}
		if (decl != "")
			end_decl()
	}
	if (line ~ /^[ \t]*#/ || line ~ /__attribute__/ || trim(line) == "")
		next
	if (!pending) {
		if (match(line, /regcache_[A-Za-z0-9_]*\(/))
			fail("public call " substr(line, RSTART, RLENGTH - 1) \
			     "() has no kernel-doc comment")
		next
	}
	if (trim(line) == ";")
		decl = decl ";"
	else
		decl = decl (decl == "" ? "" : "\n") line
	if (doc_name ~ /^struct / ? (line ~ /^}/) : (line ~ /;/))
		end_decl()
}

END {
	if (failed)
		exit 1
	if (pending && doc_name ~ /^[A-Z]/ && decl != "")
		end_decl()
	if (nf == 0) {
		print "kerneldoc-man.awk: no documented function found" > "/dev/stderr"
		exit 1
	}
	for (i = 1; i <= nf; i++)
		write_page(i)
	write_overview()
}

function write_page(i,    f, k, out, see, m, n, s, seen) {
	f = outdir "/" fname[i] ".3"
	out = generated(fhdr[i]) th(fname[i])
	out = out ".SH NAME\n" fname[i] " \\- " fmt(fsum[i]) "\n"
	out = out ".SH SYNOPSIS\n.nf\n.B #include <" fhdr[i] ">\n.PP\n" synopsis(i) ".fi\n"
	out = out ".PP\nLink with \\fI\\-lregcache\\fP " \
	      "(\\fIpkg\\-config \\-\\-libs regcache\\fP).\n"
	if (fnparam[i] > 0) {
		out = out ".SH ARGUMENTS\n"
		for (k = 1; k <= fnparam[i]; k++)
			out = out ".TP\n.I " pname[i, k] "\n" fmt(ptext[i, k]) "\n"
	}
	out = out ".SH DESCRIPTION\n"
	if (!blank(fsectext[i, 0]))
		out = out body(fsectext[i, 0])
	else
		out = out fmt(capitalize(fsum[i])) ".\n"
	for (k = 1; k <= fnsec[i]; k++) {
		s = fsecname[i, k]
		if (s ~ /^Return/)
			s = "RETURN VALUE"
		out = out ".SH " toupper(s) "\n" body(capitalize(trim(fsectext[i, k])))
	}
	# SEE ALSO: the overview, then every documented call the text names.
	see = ".BR regcache (3)"
	seen[fname[i]] = 1
	s = fsum[i] "\n" fsectext[i, 0]
	for (k = 1; k <= fnparam[i]; k++)
		s = s "\n" ptext[i, k]
	for (k = 1; k <= fnsec[i]; k++)
		s = s "\n" fsectext[i, k]
	while (match(s, /regcache_[A-Za-z0-9_]*\(/)) {
		n = substr(s, RSTART, RLENGTH - 1)
		s = substr(s, RSTART + RLENGTH)
		if ((n in page) && !(n in seen)) {
			seen[n] = 1
			see = see ",\n.BR " n " (3)"
		}
	}
	out = out ".SH SEE ALSO\n" see "\n"
	printf("%s", out) > f
	close(f)
}

function write_overview(    f, out, h, i, k, j, n, lines, title, rest, cur, see) {
	f = outdir "/regcache.3"
	# NAME: the first paragraph of the first header's introduction.
	n = split(intro[hdrs[1]], lines, "\n")
	title = ""
	for (k = 1; k <= n && trim(lines[k]) != ""; k++)
		title = title (title == "" ? "" : " ") trim(lines[k])
	rest = ""
	for (; k <= n; k++)
		rest = rest lines[k] "\n"
	sub(/^regcache: /, "", title)
	sub(/\.$/, "", title)
	out = generated("the public headers") th("regcache")
	out = out ".SH NAME\nregcache \\- " fmt(title) "\n"
	out = out ".SH SYNOPSIS\n.nf\n"
	for (h = 1; h <= nhdrs; h++) {
		n = hdrs[h]
		sub(/.*include\//, "", n)
		out = out ".B #include <" n ">\n"
	}
	out = out ".fi\n.PP\nCompile and link with \\fIpkg\\-config \\-\\-cflags \\-\\-libs regcache\\fP, " \
	      "or in CMake with \\fBfind_package(regcache)\\fP and the target " \
	      "\\fBregcache::regcache\\fP.\n"
	out = out ".SH DESCRIPTION\n" body(rest)
	out = out ".SH FUNCTIONS\n"
	for (h = 1; h <= nhdrs; h++) {
		n = hdrs[h]
		sub(/.*include\//, "", n)
		out = out ".SS <" n ">\n"
		if (h > 1) {
			# "regcache/uring.h: io_uring fixed buffers as the registrar."
			rest = intro[hdrs[h]]
			sub(/^[^ ]*\.h: /, "", rest)
			out = out body(capitalize(rest))
		}
		cur = "\001"
		for (i = 1; i <= nf; i++) {
			if (fhdr[i] != n)
				continue
			if (fbanner[i] != cur) {
				cur = fbanner[i]
				if (cur != "")
					out = out ".PP\n\\fI" fmt(cur) "\\fP\n"
			}
			out = out ".TP\n.BR " fname[i] " (3)\n" fmt(capitalize(fsum[i])) ".\n"
		}
	}
	if (nopaque + ns > 0)
		out = out ".SH TYPES\n"
	for (i = 1; i <= nopaque; i++)
		out = out ".TP\n.B " oname[i] "\n" fmt(osum[i]) "\n"
	for (i = 1; i <= ns; i++) {
		out = out ".SS " sname[i] "\n" fmt(capitalize(ssum[i])) ".\n"
		out = out ".PP\n.nf\n"
		n = split(sdecl[i], lines, "\n")
		for (k = 1; k <= n; k++) {
			gsub(/\t/, "        ", lines[k])
			out = out fmt(lines[k]) "\n"
		}
		out = out ".fi\n"
		for (k = 1; k <= snparam[i]; k++)
			out = out ".TP\n.I " sm[i, k] "\n" fmt(smt[i, k]) "\n"
		if (!blank(sdesc[i]))
			out = out ".PP\n" body(sdesc[i])
	}
	if (nm > 0)
		out = out ".SH CONSTANTS\n"
	for (i = 1; i <= nm; i++) {
		out = out ".TP\n.B " mname[i] "\n" fmt(capitalize(msum[i])) ".\n"
		if (!blank(mdesc[i]))
			out = out body(mdesc[i])
	}
	see = ""
	for (i = 1; i <= nf; i++)
		see = see (see == "" ? "" : ",\n") ".BR " fname[i] " (3)"
	out = out ".SH SEE ALSO\n" see "\n"
	printf("%s", out) > f
	close(f)
}
