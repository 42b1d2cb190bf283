// Label cli: nothing lost, nothing crashes: bad files refused, failed writes
// and full devices, signals at every stage, and device faults named.
#include "cli_util.hpp"

using namespace cli_test;

// ------------------------------------------------------- nothing lost, nothing crashes

// tests/data/bad: each file has one defect and must give its own message,
// with exit status 1 (errors.txt pairs them; make_bad_files.py writes both).
TEST(Cli, BadFilesAreRefused) {
  const fs::path dir = env("UNICORN_BAD_FILES");
  std::ifstream list(dir / "errors.txt");
  ASSERT_TRUE(list) << dir / "errors.txt";
  size_t cases = 0;
  for (std::string line; std::getline(list, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << line;
    const std::string file = line.substr(0, tab), message = line.substr(tab + 1);
    SCOPED_TRACE(file);
    const Result r = run(gen() + " --model " + (dir / file).string() + " -p hi");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_CONTAINS(r.out, message);
    EXPECT_CONTAINS(r.out, file);  // the message names the file
    ++cases;
  }
  EXPECT_GE(cases, 20u);
}

namespace {

// The command run as a user who cannot write where root can (root writes into
// read-only directories): as nobody through setpriv when this test runs as root.
std::string as_unprivileged(const std::string& cmd) {
  return ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups -- " + cmd : cmd;
}

size_t entries(const fs::path& dir) {
  return size_t(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

}  // namespace

// unicorn-convert: a full device, a read-only directory and a write cut short
// (the file-size limit, as a disk filling up mid-file) each exit 1 naming the
// path and the reason; a file that was there before stays as it was.
TEST(Cli, ConvertWriteFailuresLoseNothing) {
  const std::string convert = env("UNICORN_CONVERT") + " --random gemma3-tiny --type Q8_0 --out ";
  const Result full = run(convert + "/dev/full");
  EXPECT_EQ(full.code, 1) << full.out;
  EXPECT_CONTAINS(full.out, "/dev/full: cannot write: No space left on device");
  EXPECT_EQ(full.out.find("wrote"), std::string::npos) << full.out;

  const fs::path ro = tmp() / "read-only";
  fs::create_directories(ro);
  std::ofstream(ro / "model.gguf") << "the old model";
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                          fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(tmp(), fs::perms::all & ~(fs::perms::group_write | fs::perms::others_write));
  const Result denied = run(as_unprivileged(convert + (ro / "model.gguf").string()));
  EXPECT_EQ(denied.code, 1) << denied.out;
  EXPECT_CONTAINS(denied.out, (ro / "model.gguf").string() + ": cannot create");
  EXPECT_CONTAINS(denied.out, "Permission denied");
  EXPECT_EQ(read_text(ro / "model.gguf"), "the old model");
  EXPECT_EQ(entries(ro), 1u);
  fs::permissions(ro, fs::perms::owner_all);

  const fs::path dir = tmp() / "size-limit";
  fs::create_directories(dir);
  std::ofstream(dir / "model.gguf") << "the old model";
  // SIGXFSZ ignored: a write past the limit fails with EFBIG instead of ending the process.
  const Result cut = run("bash -c \"trap '' XFSZ; ulimit -f 64; " + convert + (dir / "model.gguf").string() + "\"");
  EXPECT_EQ(cut.code, 1) << cut.out;
  EXPECT_CONTAINS(cut.out, (dir / "model.gguf").string() + ": cannot write: File too large");
  EXPECT_EQ(read_text(dir / "model.gguf"), "the old model");
  EXPECT_EQ(entries(dir), 1u) << "the temporary file is removed";

  // And a write that works replaces the old file whole.
  ASSERT_EQ(run(convert + (dir / "model.gguf").string()).code, 0);
  EXPECT_GT(fs::file_size(dir / "model.gguf"), 100000u);
  EXPECT_EQ(entries(dir), 1u);
}

TEST(Cli, LogitsOutToAFullDevice) {
  if (env("UNICORN_TINY_ENGINE").empty()) GTEST_SKIP() << "the tiny engine binary is not built";
  const Result r = run(env("UNICORN_TINY_ENGINE") + " --model " + env("UNICORN_FIXTURES") +
                       "/tiny --tokens 2,17 --logits-out /dev/full");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_CONTAINS(r.out, "/dev/full: cannot write: No space left on device");
  EXPECT_EQ(r.out.find("written to"), std::string::npos) << r.out;
}

// Generated text into a full device is an error; into a pipe whose reader
// left (`| head`) the generator stops quietly, with status 0.
TEST(Cli, StandardOutputFullOrClosed) {
  const Result full = run("bash -c '" + gen() + " -p Hello -n 8 --temp 0 > /dev/full'");  // stderr: ours
  EXPECT_EQ(full.code, 1) << full.out;
  EXPECT_CONTAINS(full.out, "standard output: cannot write: No space left on device");
  const Result head = run("bash -c 'set -o pipefail; " + gen() +
                          " -p Hello -n 400 --temp 0 2>" + (tmp() / "head.err").string() +
                          " | head -c 8 >/dev/null'");
  EXPECT_EQ(head.code, 0) << head.out;
  const std::string err = read_text(tmp() / "head.err");
  EXPECT_EQ(err.find("cannot write"), std::string::npos) << err;
  EXPECT_EQ(err.find("\ngeneration "), std::string::npos) << "it stopped at the closed pipe:\n" << err;
}

namespace {

// A program a signal ended: its exit status as a shell sees it, how long it
// took to end after the signal (ms), and what it wrote.
struct Signalled {
  int status = -1;
  long ms = -1;
  std::string out, err;
};

// Runs `cmd` in `dir` (stdout and stderr to out and err there), waits until
// `ready` holds (a bash condition, run in `dir`), and sends `signal`. A status
// of -1: `ready` never held.
Signalled signal_when(const fs::path& dir, const std::string& cmd, const std::string& ready, const std::string& signal) {
  fs::create_directories(dir);
  const fs::path script = dir / "signal.sh";
  std::ofstream(script) << "cd " << dir.string() << " && : > out && : > err\n"
                        << cmd << " > out 2> err &\n"
                        << "pid=$!\n"
                        << "for i in $(seq 12000); do { " << ready << "; } && break; kill -0 $pid 2>/dev/null || break; sleep 0.005; done\n"
                        << "if ! { " << ready << "; }; then wait $pid; echo '-1 0' > status; exit 0; fi\n"
                        << "kill -" << signal << R"sh( $pid
start=$(date +%s%N)
wait $pid
rc=$?
echo "$rc $(( ($(date +%s%N) - start) / 1000000 ))" > status
)sh";
  Signalled s;
  if (std::system(("bash " + script.string()).c_str()) != 0) return s;
  std::ifstream(dir / "status") >> s.status >> s.ms;
  s.out = read_text(dir / "out");
  s.err = read_text(dir / "err");
  return s;
}

// A one-shot generation sent `signal` once its answer is streaming.
Signalled signal_mid_generation(const std::string& signal) {
  return signal_when(tmp() / ("signal-" + signal), gen() + " -p 'Once upon a time' -n 4000 --temp 0",
                     "[ \"$(wc -c < out)\" -gt 40 ]", signal);
}

// The files in `dir` whose names contain ".tmp." (io::AtomicFile's temporaries).
std::vector<std::string> temporaries(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) found.push_back(e.path().filename().string());
  return found;
}

}  // namespace

// Ctrl-C during a one-shot generation: it stops at the next token, prints the
// timings line and exits 130, as a shell reports a process that Ctrl-C ended.
TEST(Cli, SigintStopsAtTheNextTokenWithTimings) {
  const Signalled s = signal_mid_generation("INT");
  EXPECT_EQ(s.status, 130) << s.err;
  EXPECT_CONTAINS(s.err, "stopped: interrupted");
  EXPECT_CONTAINS(s.err, "tokens/s");
  EXPECT_LT(s.ms, 5000) << "it must stop at the next token";
}

// SIGTERM during generation: the same, with its own words and status (143),
// and the text ends with its line, not in the middle of a token.
TEST(Cli, SigtermEndsPromptly) {
  const Signalled s = signal_mid_generation("TERM");
  EXPECT_EQ(s.status, 128 + 15) << s.err;
  EXPECT_CONTAINS(s.err, "stopped: terminated (SIGTERM)");
  EXPECT_CONTAINS(s.err, "tokens/s");
  EXPECT_TRUE(s.out.ends_with("\n")) << s.out;
  EXPECT_LT(s.ms, 5000);
}

// Ctrl-C during a long prompt stops it between two passes of the prompt (the
// demo's passes are 128 tokens), not after the whole prompt.
TEST(Cli, SigintDuringALongPromptStopsWithinAPass) {
  const fs::path dir = tmp() / "signal-prompt";
  fs::create_directories(dir);
  {
    std::ofstream prompt(dir / "prompt.txt");
    for (int i = 0; i < 100; ++i) prompt << "And it came to pass in those days. ";  // 902 tokens
  }
  const Signalled s = signal_when(dir, gen() + " -f prompt.txt -n 4 --temp 0", "grep -q '^loaded' err", "INT");
  EXPECT_EQ(s.status, 130) << s.err;
  EXPECT_CONTAINS(s.err, "stopped: interrupted (SIGINT) during the prompt");
  // The timings count what went in: whole passes, fewer than the prompt's 902 tokens.
  const size_t timings = s.err.find("\nprompt ");
  ASSERT_NE(timings, std::string::npos) << s.err;
  int fed = -1;
  std::istringstream(s.err.substr(timings + 8)) >> fed;
  EXPECT_EQ(fed % 128, 0) << s.err;
  EXPECT_LT(fed, 902) << s.err;
  EXPECT_LT(s.ms, 30000) << s.err;  // one pass: 1.6 s on an idle 2-core machine, 4.1 s beside a build
}

// A signal while the model loads: a line says so, and the status is the signal's.
TEST(Cli, SigintDuringLoadSaysSo) {
  const Signalled s = signal_when(tmp() / "signal-load", gen() + " -p hi -n 4 --temp 0",
                                  "grep -q 'built-in demo model' err", "INT");
  EXPECT_EQ(s.status, 130) << s.err;
  EXPECT_CONTAINS(s.err, "interrupted (SIGINT) while");
  EXPECT_EQ(s.out, "") << "nothing is generated";
}

// Ctrl-C while unicorn-convert writes removes its temporary file: nothing is
// left beside the target, and the target is not made. (SIGTERM takes the same
// handler: tests/perplexity sends it to unicorn-perplexity.)
TEST(Cli, SignalDuringConvertLeavesNoTemporary) {
  const fs::path dir = tmp() / "convert-signal";
  const Signalled s = signal_when(dir, env("UNICORN_CONVERT") + " --random gemma3-270m --type F16 --out model.gguf",
                                  "compgen -G 'model.gguf.tmp.*' > /dev/null", "INT");
  ASSERT_NE(s.status, -1) << "no temporary file appeared: " << s.err;
  EXPECT_EQ(s.status, 130) << s.err;
  EXPECT_CONTAINS(s.err, "unicorn-convert: interrupted (SIGINT); its unfinished output files were removed");
  EXPECT_EQ(temporaries(dir), std::vector<std::string>{});
  EXPECT_FALSE(fs::exists(dir / "model.gguf"));
}

// A writer killed outright (SIGKILL) leaves its temporary; the next write to
// the same target removes those of processes that are gone, and no other.
TEST(Cli, OrphanedTemporariesAreRemovedAtTheNextWrite) {
  const fs::path dir = tmp() / "orphans";
  fs::create_directories(dir);
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_GT(gone, 0);
  waitpid(gone, nullptr, 0);
  const std::string dead = "model.gguf.tmp." + std::to_string(gone) + ".0";
  const std::string alive = "model.gguf.tmp." + std::to_string(::getpid()) + ".0";  // this test's own
  const std::string other = "other.gguf.tmp." + std::to_string(gone) + ".0";        // another target's
  for (const std::string& f : {dead, alive, other}) std::ofstream(dir / f) << "partial";
  const Result r = run(env("UNICORN_CONVERT") + " --random gemma3-tiny --type Q8_0 --out " + (dir / "model.gguf").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(fs::exists(dir / dead));
  EXPECT_TRUE(fs::exists(dir / alive));
  EXPECT_TRUE(fs::exists(dir / other));
}

// A symbolic link given as the output is followed, as the shell's `>` follows
// it, even when the file it names does not exist yet: the link stays a link.
TEST(Cli, OutputThroughADanglingLinkWritesTheFileItNames) {
  const fs::path dir = tmp() / "dangling";
  fs::create_directories(dir);
  fs::create_symlink("target.gguf", dir / "link.gguf");
  const Result r = run(env("UNICORN_CONVERT") + " --random gemma3-tiny --type Q8_0 --out " + (dir / "link.gguf").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::is_symlink(dir / "link.gguf"));
  EXPECT_TRUE(fs::is_regular_file(dir / "target.gguf"));
  EXPECT_GT(fs::file_size(dir / "target.gguf"), 1000u);
}

// What the programs print alone (--help, --layout, --placement, --engines) to
// a full device is exit 1 with the reason, in every program.
TEST(Cli, ListsAndHelpToAFullDeviceFail) {
  const std::string server = env("UNICORN_SERVER");
  for (const std::string& cmd :
       {gen() + " --help", gen() + " --layout", gen() + " --placement", gen() + " --engines", server + " --help",
        server + " --engines", server + " --layout", env("UNICORN_CONVERT") + " --help",
        env("UNICORN_TOKENIZE") + " --help"}) {
    SCOPED_TRACE(cmd);
    const Result r = run("bash -c '" + cmd + " > /dev/full'");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_CONTAINS(r.out, "cannot write: No space left on device");
  }
}

// The same for unicorn-bench (apart: the sanitizer step does not build it).
TEST(Cli, BenchHelpToAFullDeviceFails) {
  const Result r = run("bash -c '" + env("UNICORN_BENCH") + " --help > /dev/full'");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_CONTAINS(r.out, "cannot write: No space left on device");
}

// --tokens with no ids is an error, not a prompt read from standard input.
TEST(Cli, EmptyTokensIsAnError) {
  const Result r = run(gen() + " --tokens '' < /dev/null");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_CONTAINS(r.out, "--tokens: is empty: give comma-separated token ids");
}

// An --logits-out that cannot be written is refused before the model is loaded.
TEST(Cli, UnwritableLogitsOutIsRefusedFirst) {
  const Result r = run(gen() + " --tokens 2,17 --logits-out " + (tmp() / "no-such-dir" / "x.f32").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_CONTAINS(r.out, "x.f32: cannot create");
  EXPECT_EQ(r.out.find("loaded"), std::string::npos) << "refused before loading:\n" << r.out;
}

// Teacher forcing refuses logits that are not numbers (a NaN weight), as
// generation does, and writes nothing.
TEST(Cli, LogitsOutRefusesNaNLogits) {
  if (env("UNICORN_TINY_ENGINE").empty()) GTEST_SKIP() << "the tiny engine binary is not built";
  const fs::path clean = tmp() / "tiny-nan-logits.gguf", bad = tmp() / "tiny-nan-logits-bad.gguf";
  ASSERT_EQ(run(env("UNICORN_CONVERT") + " --random gemma3-tiny --type Q8_0 --out " + clean.string()).code, 0);
  fs::copy_file(clean, bad, fs::copy_options::overwrite_existing);
  {
    const auto g = unicorn::io::GgufFile::open(clean);
    std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(g.find_tensor("output_norm.weight")->offset));
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (int i = 0; i < 4; ++i) f.write(reinterpret_cast<const char*>(&nan), 4);
  }
  const fs::path out = tmp() / "nan.f32";
  const Result r = run(env("UNICORN_TINY_ENGINE") + " --model " + bad.string() + " --tokens 2,17 --logits-out " + out.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_CONTAINS(r.out, "the logits at position 0");
  EXPECT_CONTAINS(r.out, "are NaN");
  EXPECT_FALSE(fs::exists(out));
  const Result ok = run(env("UNICORN_TINY_ENGINE") + " --model " + clean.string() + " --tokens 2,17 --logits-out " + out.string());
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_TRUE(fs::exists(out));
}

// A model larger than the device memory it may use is refused at start-up,
// before anything is loaded, with the bytes needed and available per pool
// (--max-device-memory lowers what the device offers; nothing is exhausted).
TEST(Cli, ModelLargerThanDeviceMemoryIsRefusedAtStartUp) {
  const Result r = run(gen() + " --max-device-memory 16M -p hi");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_CONTAINS(r.out, "the placement does not fit");
  EXPECT_CONTAINS(r.out, "pool Vram needs");
  EXPECT_CONTAINS(r.out, "has 0.02 GiB (16777216 bytes) available");
  EXPECT_EQ(r.out.find("loaded"), std::string::npos) << "nothing is loaded first:\n" << r.out;
  const Result enough = run(gen() + " --max-device-memory 4G -p hi -n 2 --temp 0");
  EXPECT_EQ(enough.code, 0) << enough.out;
}

// --check-tensors: a NaN planted in an F32 norm and an Inf in a Q8_0 block's
// scale are found on the GPU, named with their tensor and first bad element.
TEST(Cli, CheckTensorsNamesThePlantedNaN) {
  if (env("UNICORN_TINY_ENGINE").empty()) GTEST_SKIP() << "the tiny engine binary is not built";
  const fs::path clean = tmp() / "tiny-check.gguf";
  ASSERT_EQ(run(env("UNICORN_CONVERT") + " --random gemma3-tiny --type Q8_0 --out " + clean.string()).code, 0);
  const std::string engine = env("UNICORN_TINY_ENGINE") + " --check-tensors --tokens 2,3 --model ";
  const Result ok = run(engine + clean.string());
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_CONTAINS(ok.out, "hold no NaN or Inf");

  const auto g = unicorn::io::GgufFile::open(clean);
  const auto plant = [&](const std::string& tensor, uint64_t byte, const void* value, size_t n) {
    const fs::path bad = tmp() / ("tiny-" + tensor + ".gguf");
    fs::copy_file(clean, bad, fs::copy_options::overwrite_existing);
    std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(g.find_tensor(tensor)->offset + byte));
    f.write(static_cast<const char*>(value), std::streamsize(n));
    return bad;
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Result r1 = run(engine + plant("blk.0.attn_norm.weight", 5 * 4, &nan, 4).string());
  EXPECT_EQ(r1.code, 1) << r1.out;
  EXPECT_CONTAINS(r1.out, "check-tensors: tensor 'blk.0.attn_norm.weight' (F32) holds NaN at element 5 (row 0, column 5)");
  const uint16_t inf16 = 0x7c00;  // Q8_0 blocks are {f16 scale, 32 int8}: block 3's scale
  const Result r2 = run(engine + plant("blk.1.ffn_down.weight", 3 * 34, &inf16, 2).string());
  EXPECT_EQ(r2.code, 1) << r2.out;
  EXPECT_CONTAINS(r2.out, "tensor 'blk.1.ffn_down.weight' (Q8_0) holds Inf at element 96 (row 0, column 96)");
}

#ifdef UNICORN_FAULT_INJECTION
// Builds with the test-only fault hook (CMake UNICORN_FAULT_INJECTION, the
// sanitizer step of .ci/run): a device lost or out of memory in the middle of
// an answer is reported with the pass that was running, and the generator
// exits 1; nothing hangs.
TEST(CliFault, DeviceLostMidAnswerNamesTheStep) {
  const Result r = run("UNICORN_INJECT_FAULT=device-lost@3 " + gen() + " -p 'Once upon a time' -n 20 --temp 0");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_CONTAINS(r.out, "Once upon a time");  // the prompt, and what came before the fault, were printed
  EXPECT_CONTAINS(r.out, "decode step 2 of 20 at position");
  EXPECT_CONTAINS(r.out, "the device was lost (VK_ERROR_DEVICE_LOST)");
  EXPECT_EQ(r.out.find("\ngeneration "), std::string::npos) << "no timings line after a fault:\n" << r.out;
}

TEST(CliFault, OutOfDeviceMemoryInThePromptNamesThePrefill) {
  const Result r = run("UNICORN_INJECT_FAULT=out-of-memory@1 " + gen() + " -p 'Once upon a time' -n 20 --temp 0");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_CONTAINS(r.out, "prompt tokens at position 0: gpu: ");
  EXPECT_CONTAINS(r.out, "prefill of ");
  EXPECT_CONTAINS(r.out, "out of device memory (VK_ERROR_OUT_OF_DEVICE_MEMORY)");
}
#endif
