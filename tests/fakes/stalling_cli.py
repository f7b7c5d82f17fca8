"""A stand-in agent CLI that prints a recorded stream, then hangs: for timeout tests of the CLI runners.

    stalling_cli.py LINES_FILE COUNT [ignored CLI arguments...]

Prints the first COUNT lines of LINES_FILE (flushed), then sleeps far past any test's timeout, so the
runner must stop it and convert what it printed. It also starts a child that sleeps, and writes the
child's pid to `LINES_FILE.child`, so a test can check the whole process group was stopped.
"""

import subprocess
import sys
import time
from pathlib import Path

lines_file, count = Path(sys.argv[1]), int(sys.argv[2])
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
Path(f"{lines_file}.child").write_text(str(child.pid))
for line in lines_file.read_text().splitlines()[:count]:
    print(line, flush=True)
sys.stdin.read()
time.sleep(120)
