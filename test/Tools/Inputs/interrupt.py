# interrupt.py SIGNAL STATS COMMAND...: runs COMMAND with SIGNAL's default
# disposition (lit's workers ignore SIGINT, and a child inherits that), sends
# it SIGNAL half a second after its stats file STATS says "running", and
# prints its exit status as a shell reports it (128 + the signal's number
# when the signal ended it).
import os
import signal
import subprocess
import sys
import time

sig = getattr(signal, "SIG" + sys.argv[1])
stats = sys.argv[2]
child = subprocess.Popen(
    sys.argv[3:], preexec_fn=lambda: signal.signal(sig, signal.SIG_DFL))
deadline = time.monotonic() + 120
while time.monotonic() < deadline and child.poll() is None:
    try:
        with open(stats) as f:
            if "running" in f.read():
                break
    except OSError:
        pass
    time.sleep(0.1)
time.sleep(0.5)
if child.poll() is None:
    child.send_signal(sig)
status = child.wait()
print("status", 128 - status if status < 0 else status, flush=True)
