// Label cli: unicorn-chat as a person uses it: the conversation kept, Ctrl-C
// during an answer and at the prompt, history and interrupts on a terminal.
#include "cli_util.hpp"

using namespace cli_test;

TEST(Cli, InteractiveChatKeepsTheConversation) {
  const Result r = run("printf 'Hello\\nAnd again\\n/quit\\n' | " + env("UNICORN_CHAT") + " -n 5 --temp 0");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_CONTAINS(r.out, "chat:");
  // The second turn starts where the first ended: the context keeps growing.
  const auto first = r.out.find("context "), second = r.out.find("context ", first + 1);
  ASSERT_NE(second, std::string::npos) << r.out;
  const int used1 = std::stoi(r.out.substr(first + 8)), used2 = std::stoi(r.out.substr(second + 8));
  EXPECT_GT(used2, used1) << "the second turn must extend the first, not start over";
}

namespace {

// Runs unicorn-chat with `args`, its input a named pipe, until it has printed
// its banner; then the bash lines `then` ($pid: the chat; fd 3: its input;
// $out: what it prints), then closes its input and waits. Returns what it
// printed, and "rc=<its exit status>".
std::string chat_session(const std::string& name, const std::string& args, const std::string& then) {
  const fs::path dir = tmp(), script = dir / (name + ".sh");
  std::ofstream(script) << "cd " << dir.string() << " && rm -f " << name << ".in " << name << ".out && mkfifo "
                        << name << ".in\nout=" << name << ".out\n"
                        << env("UNICORN_CHAT") << " " << args << " < " << name << ".in > $out 2>&1 &\n"
                        << "pid=$!\nexec 3>" << name << ".in\n"
                        << "for i in $(seq 600); do grep -q '^chat:' $out 2>/dev/null && break; sleep 0.1; done\n"
                        << then << "\nexec 3>&-\nwait $pid\necho \"rc=$?\" >> $out\n";
  EXPECT_EQ(std::system(("bash " + script.string()).c_str()), 0);
  return read_text(dir / (name + ".out"));
}

}  // namespace

// Ctrl-C during an answer stops that answer, not the program: the chat then
// takes the next message and exits normally. Each Ctrl-C comes once its answer
// has begun to stream (its first words are out), of answers as long as the
// context allows: no device finishes first, and neither answer runs long.
TEST(Cli, InterruptStopsTheAnswerNotTheChat) {
  const std::string out = chat_session("interrupt", "-n 100000 --temp 0", R"(streams() {  # $1: the size before
  for i in $(seq 600); do [ $(stat -c %s $out) -gt $(($1 + 24)) ] && break; sleep 0.05; done
}
answers() {  # until $1 answers have ended (their statistics lines)
  for i in $(seq 600); do [ $(grep -c 'tokens/s' $out) -ge $1 ] && break; sleep 0.05; done
}
start=$(stat -c %s $out)
echo 'Tell me a long story' >&3
streams $start
kill -INT $pid
answers 1
start=$(stat -c %s $out)
echo 'Another message' >&3
streams $start
kill -INT $pid
answers 2
echo /quit >&3)");
  const auto first = out.find(", stopped;"), second = out.find(", stopped;", first + 1);
  EXPECT_NE(first, std::string::npos) << "the answer was not stopped:\n" << out;
  EXPECT_NE(second, std::string::npos) << "no answer to the message after Ctrl-C, or not stopped:\n" << out;
  EXPECT_CONTAINS(out, "rc=0");
}

// Ctrl-C at the chat's prompt, with no answer running, leaves the chat at once
// (exit status 0); it used to be kept for the next answer, which it cancelled.
TEST(Cli, InterruptAtThePromptLeavesTheChat) {
  const std::string out = chat_session("leave", "-n 8 --temp 0", R"(sleep 0.5  # waiting at the prompt now
kill -INT $pid
for i in $(seq 50); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
if kill -0 $pid 2>/dev/null; then echo "still running 5 s after Ctrl-C" >> $out; kill -9 $pid; fi)");
  EXPECT_CONTAINS(out, "rc=0");
  EXPECT_EQ(out.find("still running"), std::string::npos) << out;
  EXPECT_EQ(out.find("tokens/s"), std::string::npos) << "no answer was asked for:\n" << out;
}

// The chat on a terminal (a pseudo-terminal, as a person types): libedit's
// history brings the last message back with the up arrow, Ctrl-C (the
// terminal's ^C, not a kill) stops an answer, and Ctrl-C at the prompt leaves.
class Terminal {
 public:
  explicit Terminal(const std::string& program, const std::vector<std::string>& args) {
    pid_ = forkpty(&fd_, nullptr, nullptr, nullptr);
    if (pid_ == 0) {
      std::vector<char*> argv{const_cast<char*>(program.c_str())};
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(program.c_str(), argv.data());
      _exit(127);
    }
  }
  ~Terminal() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }
  void type(std::string_view keys) { ASSERT_EQ(write(fd_, keys.data(), keys.size()), ssize_t(keys.size())); }
  // Reads until `needle` appears after `from` in the transcript, or `seconds` pass.
  bool wait_for(const std::string& needle, size_t from, double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (transcript.find(needle, from) == std::string::npos) {
      if (std::chrono::steady_clock::now() > end) return false;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) > 0) {
        char buf[4096];
        const ssize_t n = read(fd_, buf, sizeof buf);
        if (n <= 0) return transcript.find(needle, from) != std::string::npos;
        transcript.append(buf, size_t(n));
      }
    }
    return true;
  }
  // Reads until the transcript holds `n` bytes, or `seconds` pass.
  bool wait_for_bytes(size_t n, double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (transcript.size() < n && std::chrono::steady_clock::now() < end) wait_for("\x01never", 0, 0.05);
    return transcript.size() >= n;
  }
  // The exit status once the program has ended, within `seconds`; -1 if not.
  int exit_status(double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      int status = 0;
      wait_for("\x01never", transcript.size(), 0.05);  // keep draining its output
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
    }
    return -1;
  }
  // The chat's first prompt, within `seconds` (the model loads first).
  // The chat's banner ("chat: type a message; ..."), then its first prompt.
  // Not "chat:" alone: the demo model's notice, "unicorn-chat: no --model
  // given ...", comes first and holds it, which left the whole start-up (over
  // 10 s for an ASan build beside another test on 2 cores) the prompt's 10 s.
  bool wait_for_chat(double seconds = 120) {
    return wait_for("chat: type a message", 0, seconds) &&
           wait_for("> ", transcript.find("chat: type a message"), 10);
  }
  // An answer's closing statistics line after `from`, within `seconds`, and
  // the prompt after it.
  bool wait_for_answer(size_t from, double seconds = 120) {
    return wait_for("context ", from, seconds) && wait_for("> ", transcript.find("context ", from), 10);
  }
  std::string transcript;

 private:
  int fd_ = -1;
  pid_t pid_ = -1;
  bool exited_ = false;
};

TEST(Cli, ChatHistoryOnATerminal) {
  Terminal t(env("UNICORN_CHAT"), {"-n", "24", "--temp", "0"});
  ASSERT_TRUE(t.wait_for_chat()) << t.transcript;
  size_t at = t.transcript.size();
  t.type("Hello there\r");
  ASSERT_TRUE(t.wait_for_answer(at)) << t.transcript;

  // The up arrow brings "Hello there" back; Enter sends it again.
  at = t.transcript.size();
  t.type("\x1b[A");
  EXPECT_TRUE(t.wait_for("Hello there", at, 10)) << "no history:\n" << t.transcript;
  t.type("\r");
  ASSERT_TRUE(t.wait_for_answer(at)) << t.transcript;

  // ^C at the prompt leaves, with status 0.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  t.type("\x03");
  EXPECT_EQ(t.exit_status(10), 0) << t.transcript;
}

TEST(Cli, ChatInterruptOnATerminal) {
  // An answer as long as the context allows, so that ^C comes while it streams.
  Terminal t(env("UNICORN_CHAT"), {"-n", "100000", "--temp", "0"});
  ASSERT_TRUE(t.wait_for_chat()) << t.transcript;
  size_t at = t.transcript.size();
  t.type("Tell me a long story\r");
  ASSERT_TRUE(t.wait_for("story", at, 10)) << t.transcript;
  const size_t echoed = t.transcript.find("story", at) + 7;  // the echo, "\r\n"
  ASSERT_TRUE(t.wait_for_bytes(echoed + 16, 120)) << "no answer:\n" << t.transcript;
  t.type("\x03");
  ASSERT_TRUE(t.wait_for("context ", at, 60)) << t.transcript;
  EXPECT_TRUE(t.wait_for(", stopped;", at, 1)) << "the answer was not stopped:\n" << t.transcript;
  ASSERT_TRUE(t.wait_for("> ", t.transcript.find("context ", at), 10)) << t.transcript;

  // The chat goes on: the next message gets its answer (stopped too).
  at = t.transcript.size();
  t.type("Go on\r");
  ASSERT_TRUE(t.wait_for("Go on", at, 10)) << t.transcript;
  ASSERT_TRUE(t.wait_for_bytes(t.transcript.find("Go on", at) + 7 + 16, 120)) << t.transcript;
  t.type("\x03");
  ASSERT_TRUE(t.wait_for_answer(at, 60)) << t.transcript;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  t.type("\x04");  // Ctrl-D at an empty prompt leaves too
  EXPECT_EQ(t.exit_status(10), 0) << t.transcript;
}
