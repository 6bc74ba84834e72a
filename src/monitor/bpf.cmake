# The eBPF monitor backend (src/monitor/bpf.c + src/monitor/bpf/*.bpf.c).
# Included OPTIONAL by the top CMakeLists.txt. Needs clang (-target bpf),
# bpftool, libbpf (pkg-config) and the kernel's BTF; without any of them the
# library is built without it and "auto" falls back to userfaultfd / none.
option(REGCACHE_MONITOR_BPF "build the eBPF monitor backend when possible" ON)
set(REGCACHE_VMLINUX_BTF "/sys/kernel/btf/vmlinux" CACHE FILEPATH
  "BTF of the kernel the BPF programs are compiled against (CO-RE relocates them)")

# Compile src/monitor/bpf/rc_monitor.bpf.c with the extra definition
# @define into ${out}/@name.bpf.o and generate its skeleton @name.skel.h
# (struct @name_bpf). Uses arch, out and src of the caller.
macro(regcache_bpf_skeleton name define)
  add_custom_command(OUTPUT ${out}/${name}.bpf.o
    COMMAND ${REGCACHE_CLANG} -target bpf -O2 -g -D__TARGET_ARCH_${arch}
            ${define} -Wall -Werror -I${out} -I${src} ${LIBBPF_CFLAGS}
            -c ${src}/rc_monitor.bpf.c -o ${out}/${name}.bpf.o
    DEPENDS ${src}/rc_monitor.bpf.c ${PROJECT_SOURCE_DIR}/src/abi/rc_bpf_abi.h ${out}/vmlinux.h
    COMMENT "clang -target bpf ${define} rc_monitor.bpf.c -> ${name}.bpf.o"
    VERBATIM)
  add_custom_command(OUTPUT ${out}/${name}.skel.h
    COMMAND ${REGCACHE_BPFTOOL} gen skeleton ${out}/${name}.bpf.o name ${name}_bpf > ${out}/${name}.skel.h.tmp
    COMMAND ${CMAKE_COMMAND} -E rename ${out}/${name}.skel.h.tmp ${out}/${name}.skel.h
    DEPENDS ${out}/${name}.bpf.o
    COMMENT "bpftool gen skeleton ${name}"
    VERBATIM)
endmacro()

function(regcache_bpf_backend)
  if(NOT REGCACHE_MONITOR_BPF)
    message(STATUS "eBPF monitor: disabled (REGCACHE_MONITOR_BPF=OFF)")
    return()
  endif()
  find_program(REGCACHE_CLANG NAMES clang clang-14 clang-15 clang-16 clang-13)
  find_program(REGCACHE_BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin)
  pkg_check_modules(LIBBPF IMPORTED_TARGET libbpf>=0.8)
  set(missing "")
  if(NOT REGCACHE_CLANG)
    list(APPEND missing "clang")
  endif()
  if(NOT REGCACHE_BPFTOOL)
    list(APPEND missing "bpftool")
  endif()
  if(NOT LIBBPF_FOUND)
    list(APPEND missing "libbpf (pkg-config libbpf; apt-get install libbpf-dev)")
  endif()
  if(NOT EXISTS ${REGCACHE_VMLINUX_BTF})
    list(APPEND missing "${REGCACHE_VMLINUX_BTF} (kernel built without CONFIG_DEBUG_INFO_BTF)")
  endif()
  if(missing)
    string(JOIN ", " missing_s ${missing})
    message(STATUS "eBPF monitor: not built, missing ${missing_s}")
    return()
  endif()

  set(src ${CMAKE_CURRENT_SOURCE_DIR}/src/monitor/bpf)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/monitor-bpf)
  file(MAKE_DIRECTORY ${out})
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
    set(arch x86)
  else()
    message(STATUS "eBPF monitor: not built, only x86_64 syscall numbers are known")
    return()
  endif()

  add_custom_command(OUTPUT ${out}/vmlinux.h
    COMMAND ${REGCACHE_BPFTOOL} btf dump file ${REGCACHE_VMLINUX_BTF} format c > ${out}/vmlinux.h.tmp
    COMMAND ${CMAKE_COMMAND} -E rename ${out}/vmlinux.h.tmp ${out}/vmlinux.h
    COMMENT "vmlinux.h from ${REGCACHE_VMLINUX_BTF}"
    VERBATIM)
  # One object and skeleton per variant of the same programs: the
  # in-process monitor's, and the node's (-DRC_NODE), loaded once per node
  # by the regcached daemon (tools/regcached/regcached.cmake).
  regcache_bpf_skeleton(rc_monitor "")
  regcache_bpf_skeleton(rc_node -DRC_NODE)
  add_custom_target(regcache_bpf_skel DEPENDS ${out}/rc_monitor.skel.h)
  add_custom_target(regcache_node_skel DEPENDS ${out}/rc_node.skel.h)
  # Both skeletons need vmlinux.h: one target makes it first, or a parallel
  # build runs its command twice into the same file.
  add_custom_target(regcache_vmlinux_h DEPENDS ${out}/vmlinux.h)
  add_dependencies(regcache_bpf_skel regcache_vmlinux_h)
  add_dependencies(regcache_node_skel regcache_vmlinux_h)
  set(REGCACHE_BPF_OUT ${out} PARENT_SCOPE)

  target_sources(regcache PRIVATE src/monitor/bpf.c src/monitor/bpf_files.c
    src/kernel/bpf_kernel.c
    ${out}/rc_monitor.skel.h)
  add_dependencies(regcache regcache_bpf_skel)
  target_include_directories(regcache PRIVATE ${out} ${src})
  target_link_libraries(regcache PRIVATE PkgConfig::LIBBPF)
  target_compile_definitions(regcache PRIVATE RC_HAVE_MONITOR_BPF=1)
  set(REGCACHE_HAVE_BPF ON PARENT_SCOPE)
  message(STATUS "eBPF monitor: built (${REGCACHE_CLANG}, ${REGCACHE_BPFTOOL}, libbpf ${LIBBPF_VERSION})")
endfunction()

regcache_bpf_backend()
