"""A process tree for the sampler's tests: N processes in all, one of them spinning.

python tree.py N         prints the busy child's PID once all N processes run
python tree.py writer F  on a stdin line, writes 32 MiB to F (fsync), prints "done",
                         then sleeps
python tree.py changes   on each stdin line: "spawn" starts a sleeping child,
                         "orphan" a grandchild whose parent exits, "reap" ends the
                         children it started; prints each new PID
"""

import os
import subprocess
import sys
import time

SLEEP = "import sys,time\nsys.stdout.write('up\\n'); sys.stdout.flush(); time.sleep(600)"
SPIN = "import sys\nsys.stdout.write('up\\n'); sys.stdout.flush()\nwhile True: pass"
ORPHAN = (
    "import subprocess,sys\n"
    "p = subprocess.Popen([sys.executable, '-S', '-c', 'import time; time.sleep(600)'],\n"
    "                     stdout=subprocess.DEVNULL)\n"
    "print(p.pid, flush=True)\n"
)


def child(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-S", "-c", code], stdout=subprocess.PIPE)


def tree(count: int) -> None:
    kids = [child(SLEEP) for _ in range(count - 2)]
    busy = child(SPIN)
    for kid in [*kids, busy]:
        assert kid.stdout is not None
        kid.stdout.readline()
    print(busy.pid, flush=True)
    time.sleep(600)


def writer(path: str) -> None:
    sys.stdin.readline()
    block = os.urandom(1 << 20)
    with open(path, "wb") as file:
        for _ in range(32):
            file.write(block)
        file.flush()
        os.fsync(file.fileno())
    print("done", flush=True)
    time.sleep(600)


def changes() -> None:
    kids: list[subprocess.Popen[bytes]] = []
    for line in sys.stdin:
        word = line.strip()
        if word == "spawn":
            kid = child(SLEEP)
            assert kid.stdout is not None
            kid.stdout.readline()
            kids.append(kid)
            print(kid.pid, flush=True)
        elif word == "orphan":
            out = subprocess.run(
                [sys.executable, "-S", "-c", ORPHAN], stdout=subprocess.PIPE, check=True
            )
            print(int(out.stdout), flush=True)
        elif word == "reap":
            for kid in kids:
                kid.kill()
                kid.wait()
            kids.clear()
            print("reaped", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "writer":
        writer(sys.argv[2])
    elif sys.argv[1] == "changes":
        changes()
    else:
        tree(int(sys.argv[1]))
