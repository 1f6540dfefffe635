"""Attack scripts shared by the sandbox tests (tests/agent/tools and tests/e2e)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests._ci import unavailable

__all__ = ["IO_URING_CONNECT_C", "compile_c", "fork_flood", "io_uring_probe", "socketpair_datagram"]


def compile_c(source: str, out: Path) -> Path:
    """`source` (C) built with gcc into `out` (beside it, `out.c`); gcc is required under `CI=true`."""
    gcc = shutil.which("gcc")
    if gcc is None:
        unavailable("needs gcc")
    src = out.with_suffix(".c")
    src.write_text(source)
    subprocess.run([gcc, "-O1", "-o", str(out), str(src)], check=True, capture_output=True)
    return out


def fork_flood(label: str) -> str:
    """Python source that forks up to 2,000 children, each parked until a signal ends it.

    It exits with `<label> after <n>: <strerror>` when a fork is refused; the
    children go with the sandboxed command (its pid namespace or cgroup).
    """
    return (
        "import os, signal, sys\n"
        "n = 0\n"
        "try:\n"
        "    while n < 2000:\n"
        "        if os.fork() == 0:\n"
        "            signal.pause()\n"
        "            os._exit(0)\n"
        "        n += 1\n"
        "except OSError as exc:\n"
        f'    sys.exit("{label} after %d: %s" % (n, exc.strerror))\n'
    )


IO_URING_CONNECT_C = r"""
/* io_uring_connect PATH: make an AF_UNIX socket through io_uring (IORING_OP_SOCKET, no socket()
   system call) and connect it to PATH. Prints "connected" on success. */
#include <errno.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    int ring = (int)syscall(__NR_io_uring_setup, 4, &p);
    if (ring < 0) { printf("io_uring_setup: %s\n", strerror(errno)); return 1; }
    size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    char *sq = mmap(0, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
    char *cq = mmap(0, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
    struct io_uring_sqe *sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                                     MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
    if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) { printf("mmap: %s\n", strerror(errno)); return 1; }
    unsigned *tail = (unsigned *)(sq + p.sq_off.tail), *mask = (unsigned *)(sq + p.sq_off.ring_mask);
    unsigned *array = (unsigned *)(sq + p.sq_off.array);
    unsigned index = *tail & *mask;
    memset(&sqes[index], 0, sizeof sqes[index]);
    sqes[index].opcode = IORING_OP_SOCKET;
    sqes[index].fd = AF_UNIX;
    sqes[index].off = SOCK_STREAM;
    array[index] = index;
    __atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
    if (syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0) {
        printf("io_uring_enter: %s\n", strerror(errno)); return 1;
    }
    unsigned head = __atomic_load_n((unsigned *)(cq + p.cq_off.head), __ATOMIC_ACQUIRE);
    struct io_uring_cqe *cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
    int fd = cqes[head & *(unsigned *)(cq + p.cq_off.ring_mask)].res;
    if (fd < 0) { printf("IORING_OP_SOCKET: %s\n", strerror(-fd)); return 1; }
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, argv[1], sizeof addr.sun_path - 1);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) { printf("connect: %s\n", strerror(errno)); return 1; }
    printf("connected\n");
    return 0;
}
"""
"""C source of `io_uring_connect PATH`: an AF_UNIX socket made through io_uring (`IORING_OP_SOCKET`,
no `socket()` system call), connected to PATH; prints `connected` when it got through."""


def io_uring_probe() -> str:
    """Python source printing `<name> <errno name or 'ok'>` for each io_uring system call.

    The numbers (425, 426, 427) are the same on x86-64 and arm64. `io_uring_enter` and
    `io_uring_register` get fd -1: a kernel that lets them through answers `EBADF`.
    """
    return (
        "import ctypes, errno, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "params = ctypes.create_string_buffer(120)\n"
        "calls = (('io_uring_setup', 425, (4, params)), ('io_uring_enter', 426, (-1, 0, 0, 0, None, 0)),\n"
        "         ('io_uring_register', 427, (-1, 0, None, 0)))\n"
        "for name, nr, args in calls:\n"
        "    ret = libc.syscall(nr, *args)\n"
        "    print(name, 'ok' if ret >= 0 else errno.errorcode[ctypes.get_errno()])\n"
    )


def socketpair_datagram(path: str) -> str:
    """Python source that sends to the datagram socket at `path` from a `socketpair` (no `socket()`).

    It tries both `sendto` and `connect` + `send`; prints `sent` for each that got through.
    """
    return (
        "import socket\n"
        "try:\n"
        "    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
        "except OSError as exc:\n"
        "    raise SystemExit(f'socketpair refused: {exc}')\n"
        f"a.sendto(b'sendto', {path!r})\n"
        "print('sent')\n"
        f"b.connect({path!r})\n"
        "b.send(b'connect')\n"
        "print('sent')\n"
    )
