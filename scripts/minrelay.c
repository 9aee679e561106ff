/* The least a PTY relay can do, as a baseline for scripts/bench-terminal.sh:
 * run the command on a new PTY and copy its output to stdout with blocking
 * read(2) and write(2) and nothing else — no poll, no stop, no tap, no
 * input, no log. Not part of cx. */
#include <pty.h>
#include <stdio.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: minrelay COMMAND [ARG...]\n");
    return 2;
  }
  int master;
  pid_t pid = forkpty(&master, NULL, NULL, NULL);
  if (pid < 0) {
    perror("forkpty");
    return 1;
  }
  if (pid == 0) {
    execvp(argv[1], argv + 1);
    _exit(127);
  }
  struct termios saved, raw;
  int tty = tcgetattr(0, &saved) == 0;
  if (tty) { /* as cx and script(1) do with the user's terminal */
    raw = saved;
    cfmakeraw(&raw);
    tcsetattr(0, TCSANOW, &raw);
  }
  static char buf[128 << 10];
  for (;;) {
    ssize_t n = read(master, buf, sizeof buf);
    if (n <= 0)
      break;
    for (ssize_t off = 0; off < n;) {
      ssize_t w = write(1, buf + off, n - off);
      if (w <= 0)
        goto done;
      off += w;
    }
  }
done:
  if (tty)
    tcsetattr(0, TCSANOW, &saved);
  int status;
  waitpid(pid, &status, 0);
  return 0;
}
