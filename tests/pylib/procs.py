"""Stopping the processes a test harness started (standard library only)."""
import signal
import subprocess


def stop(proc, sig=signal.SIGTERM, timeout=10):
    """Sends sig to proc if it still runs, waits up to timeout seconds for
    it to exit, then kills it; returns its exit status."""
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)
    return proc.returncode
