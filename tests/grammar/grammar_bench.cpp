// The grammar matcher's mask cost with the real Gemma 3 vocabulary (262,145
// tokens): allowed_tokens() timed at every token while a valid document is fed
// token by token. Not a test. Prints, for json_object and a 20-field object
// schema (tests/grammar/sample_schemas.hpp), the median, p99 and largest time
// of one call, and how many calls took over 2 ms: over the first document (the
// grammar's mask cache empty: what a new schema's first request pays), over the
// next documents (the cache filled by the earlier ones, with some states still
// new: another number's length), and over all documents again
// (every entry they need cached: a schema's steady state). Times are the
// thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so that a machine busy with
// other work (a preempted call) does not count against the matcher.
// Usage: unicorn-grammar-bench <tokenizer.json> [documents (default 8)]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "sample_schemas.hpp"
#include "unicorn/grammar/grammar.hpp"
#include "unicorn/grammar/json_schema.hpp"
#include "unicorn/grammar/matcher.hpp"
#include "unicorn/grammar/vocabulary.hpp"
#include "unicorn/text/tokenizer.hpp"

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

struct Stats {
  double median, p99, max;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto at = [&](double q) { return v[std::min(v.size() - 1, size_t(q * double(v.size())))]; };
  return {at(0.5), at(0.99), v.back()};
}

// Feeds each document through a new matcher; returns the time of every
// allowed_tokens() call, per document. Exits if a token of a valid document is
// not allowed.
double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

std::vector<std::vector<double>> feed(const std::shared_ptr<const unicorn::grammar::Grammar>& g,
                                      const std::shared_ptr<const unicorn::grammar::Vocabulary>& v,
                                      const unicorn::text::Tokenizer& tok, const std::vector<std::string>& docs) {
  std::vector<std::vector<double>> out;
  std::vector<uint32_t> words((v->size() + 31) / 32);
  for (const auto& doc : docs) {
    unicorn::grammar::Matcher m(g, v);
    std::vector<double> times;
    std::vector<int32_t> ids = tok.encode(doc);
    ids.push_back(tok.end_of_turn_id());
    for (const int32_t id : ids) {
      const double t = thread_cpu_ms();
      m.allowed_tokens(words);
      times.push_back(thread_cpu_ms() - t);
      if (!((words[size_t(id) >> 5] >> (id & 31)) & 1) || !m.accept(id)) {
        std::fprintf(stderr, "token %d (%s) of a valid document was not allowed\n", id,
                     std::string(tok.token_bytes(id)).c_str());
        std::exit(1);
      }
    }
    out.push_back(std::move(times));
  }
  return out;
}

void report(const char* name, double compile_ms, const std::vector<std::vector<double>>& first_pass,
            const std::vector<std::vector<double>>& second_pass) {
  std::vector<double> warming, steady;
  for (size_t i = 1; i < first_pass.size(); ++i) warming.insert(warming.end(), first_pass[i].begin(), first_pass[i].end());
  for (const auto& d : second_pass) steady.insert(steady.end(), d.begin(), d.end());
  std::printf("| %-15s | %7.2f |", name, compile_ms);
  const std::vector<double>* parts[] = {&first_pass[0], &warming, &steady};
  for (const auto* v : parts) {
    const Stats s = stats(*v);
    const auto slow = std::count_if(v->begin(), v->end(), [](double ms) { return ms > 2.0; });
    std::printf(" %5zu | %6.3f | %6.3f | %6.2f | %4td |", v->size(), s.median, s.p99, s.max, slow);
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <tokenizer.json> [documents]\n", argv[0]);
    return 2;
  }
  const int n_docs = argc > 2 ? std::max(2, std::atoi(argv[2])) : 8;
  auto t = Clock::now();
  const auto tok = unicorn::text::Tokenizer::from_tokenizer_json(argv[1]);
  const double tok_ms = ms_since(t);
  t = Clock::now();
  const auto vocab = unicorn::grammar::Vocabulary::from_tokenizer(tok);
  std::printf("tokenizer %.0f ms; vocabulary %.0f ms (%zu tokens, %zu trie nodes)\n\n", tok_ms, ms_since(t),
              vocab->size(), vocab->trie().nodes.size());

  std::printf("allowed_tokens() per call, ms of CPU: the first document (cache empty) | the next %d | all %d again\n\n",
              n_docs - 1, n_docs);
  std::printf("| %-15s | %7s |", "grammar", "compile");
  for (int i = 0; i < 3; ++i) std::printf(" %5s | %6s | %6s | %6s | %4s |", "calls", "median", "p99", "max", ">2ms");
  std::printf("\n| %-15s | %7s |", "---", "---:");
  for (int i = 0; i < 3; ++i) std::printf(" %5s | %6s | %6s | %6s | %4s |", "---:", "---:", "---:", "---:", "---:");
  std::printf("\n");

  const nlohmann::ordered_json schema = unicorn::grammar::samples::twenty_field_schema();
  std::vector<std::string> object_docs, schema_docs;
  for (int i = 0; i < n_docs; ++i) {
    const auto d = unicorn::grammar::samples::twenty_field_document(i);
    // Compact: the grammar's whitespace is one optional space (json_schema.hpp).
    object_docs.push_back(d.dump());
    schema_docs.push_back(unicorn::grammar::samples::dump_in_schema_order(d, schema, -1));
  }

  t = Clock::now();
  const auto object = unicorn::grammar::compile_gbnf(unicorn::grammar::gbnf_json_object());
  const double object_ms = ms_since(t);
  const auto object_first = feed(object, vocab, tok, object_docs);
  report("json_object", object_ms, object_first, feed(object, vocab, tok, object_docs));

  t = Clock::now();
  const auto twenty = unicorn::grammar::compile_gbnf(unicorn::grammar::gbnf_from_json_schema(schema));
  const double twenty_ms = ms_since(t);
  const auto twenty_first = feed(twenty, vocab, tok, schema_docs);
  report("20-field schema", twenty_ms, twenty_first, feed(twenty, vocab, tok, schema_docs));
  std::printf("\nmask cache entries: json_object %zu, 20-field schema %zu\n", object->mask_cache(vocab)->size(),
              twenty->mask_cache(vocab)->size());
  return 0;
}
