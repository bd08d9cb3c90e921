"""`lumen chat` in a real pseudo-terminal: Ctrl-C while a reply streams stops that reply and brings
the prompt back (the conversation goes on), Ctrl-C at the prompt quits, and the history is kept."""
import os
import pty
import select
import signal
import subprocess
import termios
import time

from conftest import lumen_bin, real_model

MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"


class Terminal:
    def __init__(self, args, env):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: a session of its own with the pty as controlling terminal
            os.execve(args[0], args, env)
        self.seen = b""

    def read_until(self, needle: bytes, timeout=60.0) -> bytes:
        """Everything read until `needle` appears after what was consumed before."""
        deadline = time.monotonic() + timeout
        start = len(self.seen)
        while needle not in self.seen[start:]:
            left = deadline - time.monotonic()
            assert left > 0, f"no {needle!r} within {timeout} s; the terminal shows {self.seen[-400:]!r}"
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:  # the child closed the terminal
                    chunk = b""
                assert chunk, f"terminal closed before {needle!r}: {self.seen[-400:]!r}"
                self.seen += chunk
        return self.seen[start:]

    def read_some(self, min_bytes, timeout=60.0):
        deadline = time.monotonic() + timeout
        start = len(self.seen)
        while len(self.seen) - start < min_bytes:
            assert time.monotonic() < deadline, f"only {self.seen[start:]!r}"
            ready, _, _ = select.select([self.fd], [], [], 1)
            if ready:
                self.seen += os.read(self.fd, 4096)

    def wait_for_the_line_editor(self, timeout=30.0):
        """Until libedit has the terminal in its character mode (ICANON off; the master shows the
        slave's modes). Text typed before that is echoed twice, by the kernel and by libedit, and
        the second echo once passed for the start of a reply: Ctrl-C then hit the prompt."""
        deadline = time.monotonic() + timeout
        while termios.tcgetattr(self.fd)[3] & termios.ICANON:
            assert time.monotonic() < deadline, "the line editor never took the terminal"
            time.sleep(0.02)

    def send(self, data: bytes):
        os.write(self.fd, data)

    def _drain(self):
        """Reads what the exited child left in the terminal, until it reports end of file (EIO on
        Linux once no process holds the other side) or a second passes without data."""
        while True:
            try:
                if not select.select([self.fd], [], [], 1.0)[0]:
                    return
                chunk = os.read(self.fd, 4096)
            except OSError:
                return
            if not chunk:
                return
            self.seen += chunk

    def wait(self, timeout=30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self._drain()  # what it wrote last may still be in the terminal (seen flaky under load)
                return status
            try:  # keep draining so the child never blocks on a full terminal
                if select.select([self.fd], [], [], 0.2)[0]:
                    self.seen += os.read(self.fd, 4096)
            except OSError:
                pass
        os.kill(self.pid, signal.SIGKILL)
        raise AssertionError("lumen chat did not exit")


def test_ctrl_c_stops_the_reply_and_returns_to_the_prompt(tmp_path):
    env = dict(os.environ, LUMEN_HOME=str(tmp_path), TERM="xterm")
    args = [lumen_bin(), "chat", "-m", str(real_model(MODEL)), "--temp", "0", "-n", "4000", "-c", "8192"]
    term = Terminal(args, env)
    term.read_until(b"> ")
    term.wait_for_the_line_editor()
    term.send(b"Write a long essay about the history of the ocean, with many sections.\r")
    term.read_until(b"sections.\r\n")  # the terminal's echo of the message
    term.read_some(40)  # the reply is streaming
    term.send(b"\x03")  # Ctrl-C, through the terminal's line discipline: SIGINT
    term.read_until(b"> ", timeout=30)
    term.wait_for_the_line_editor()
    # Still alive and still chatting: a second message gets a reply.
    term.send(b"Say hello.\r")
    after = term.read_until(b"> ", timeout=120)
    assert len(after.strip()) > len(b"Say hello."), after
    # Ctrl-C at the prompt quits, as SIGINT.
    term.send(b"\x03")
    status = term.wait()
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGINT, status
    history = (tmp_path / "chat_history").read_text(errors="replace")
    assert "Say\\040hello." in history  # libedit escapes spaces


def test_piped_chat_prints_only_the_replies():
    r = subprocess.run([lumen_bin(), "chat", "-m", str(real_model(MODEL)), "--temp", "0", "-n", "8"],
                       input="Hi\nSay hello.\n", capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) >= 2 and not any(l.startswith("> ") for l in lines)
    assert "<|im_end|>" not in r.stdout


def test_terminal_chat_shows_a_banner_and_ends_its_line_on_ctrl_d(tmp_path):
    env = dict(os.environ, LUMEN_HOME=str(tmp_path), TERM="xterm")
    term = Terminal([lumen_bin(), "chat", "-m", str(real_model(MODEL)), "--temp", "0", "-n", "8"], env)
    banner = term.read_until(b"> ")
    assert b"lumen chat: SmolLM2-135M-Instruct.Q4_1.gguf" in banner and b"/help" in banner, banner
    assert b"Ctrl-D or /exit quits" in banner, banner
    term.wait_for_the_line_editor()
    term.send(b"/help\r")
    assert b"/reset" in term.read_until(b"> ")
    term.wait_for_the_line_editor()
    term.send(b"\x04")  # Ctrl-D at an empty prompt: end of input
    status = term.wait()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    assert term.seen.endswith(b"\r\n"), term.seen[-40:]  # the shell's prompt starts on its own line


def chat_piped(lines, *extra):
    r = subprocess.run([lumen_bin(), "chat", "-m", str(real_model(MODEL)), "--temp", "0", "-n", "12", *extra],
                       input="".join(l + "\n" for l in lines), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r


def test_reset_and_system_start_a_new_conversation():
    # Greedy: the same conversation gives the same reply, a different one (another system
    # message) a different reply.
    first = chat_piped(["What is the capital of France?"]).stdout
    again = chat_piped(["Say one word.", "/reset", "What is the capital of France?"]).stdout
    assert len(again) > len(first) and again.endswith(first), (first, again)
    pirate = chat_piped(["/system You are a pirate. Answer like a pirate.", "What is the capital of France?"]).stdout
    plain = chat_piped(["What is the capital of France?"], "--system", "You are a pirate. Answer like a pirate.").stdout
    assert pirate == plain and pirate != first, (pirate, plain, first)
    shown = chat_piped(["/system You are terse.", "/system"])
    assert "You are terse." in shown.stderr and shown.stdout == ""


def test_unknown_commands_are_not_sent_and_double_slash_sends_text():
    r = chat_piped(["/rest", "//help me"])
    assert "unknown command /rest" in r.stderr
    # Only "/help me" reached the model: the same reply as when it is the only line.
    alone = chat_piped(["//help me"])
    assert r.stdout == alone.stdout and r.stdout.strip(), (r.stdout, alone.stdout)


def test_chat_with_the_catalogs_base_model_says_why_its_replies_make_no_sense():
    # Gemma 3 270M in the catalog is the base model: it chats through the built-in gemma
    # template, but nothing else would tell the user it was never tuned to.
    r = subprocess.run([lumen_bin(), "chat", "-m", str(real_model("gemma-3-270m-q4_k_m.gguf")), "--temp", "0",
                        "-n", "4"], input="Hi\n", capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "gemma3 is a base model" in r.stderr, r.stderr
    plain = chat_piped(["Hi"])
    assert "base model" not in plain.stderr, plain.stderr
