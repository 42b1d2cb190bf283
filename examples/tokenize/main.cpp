// unicorn-tokenize — Gemma 3 tokenizer on the command line.
//
//   echo 'Hello world' | unicorn-tokenize --tokenizer tokenizer.json --add-bos
//   2,9259,1902
//   unicorn-tokenize --tokenizer model.gguf -p 'Hello world'
//   9259,1902
//   echo 2,9259,1902 | unicorn-tokenize --tokenizer model.gguf --decode
//   <bos>Hello world
//   echo '["Hello world", "<start_of_turn>user\nHi"]' | unicorn-tokenize --tokenizer tokenizer.json --json
//   [[9259,1902],[105,2364,107,10979]]
//
// Plain text by default: the text (standard input, or --prompt) is encoded
// whole, and the ids are printed comma-separated, as the generator's --tokens
// takes them; a text file is encoded as it is (its last newline included).
// --decode reads ids separated by commas or white space. --json reads and
// writes JSON arrays, several texts at once; with --chat it renders
// conversations ([{"role","content"}, ...]) with Gemma's chat template.
// --tokenizer takes a Hugging Face tokenizer.json or a GGUF file (its
// tokenizer.ggml.* vocabulary).
#include <CLI/CLI.hpp>

#include <cctype>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "unicorn/base/error.hpp"
#include "unicorn/io/file_output.hpp"
#include "program_exit.hpp"
#include "unicorn/text/chat_template.hpp"
#include "unicorn/text/load_tokenizer.hpp"

namespace {

std::string read_stdin() {
  std::ostringstream text;
  text << std::cin.rdbuf();
  return text.str();
}

// Token ids separated by commas and/or white space, each a number below the
// vocabulary's size.
std::vector<int32_t> parse_ids(const std::string& text, size_t vocab) {
  std::vector<int32_t> ids;
  std::string item;
  const auto flush = [&] {
    if (item.empty()) return;
    size_t used = 0;
    unsigned long v = 0;
    try {
      v = item.find_first_not_of("0123456789") == std::string::npos ? std::stoul(item, &used) : 0;
    } catch (const std::exception&) {  // past unsigned long
      used = 0;
    }
    if (used != item.size() || v >= vocab)
      throw unicorn::Error("--decode: '" + item + "' is not a token id (the vocabulary has " + std::to_string(vocab) +
                           ")");
    ids.push_back(int32_t(v));
    item.clear();
  };
  for (const char c : text) {
    if (c == ',' || std::isspace(static_cast<unsigned char>(c))) flush();
    else item += c;
  }
  flush();
  return ids;
}

// The default mode: one plain text in, its ids out; or ids in, text out.
int plain(const std::string& tokenizer_path, const std::string& prompt, bool decode, bool add_bos,
          bool skip_special) {
  if (tokenizer_path.empty()) throw unicorn::Error("--tokenizer is required (tokenizer.json or GGUF)");
  const auto tokenizer = unicorn::text::load_tokenizer(tokenizer_path);
  const std::string text = prompt.empty() ? read_stdin() : prompt;
  if (decode) {
    unicorn::io::write_stdout(tokenizer.decode(parse_ids(text, tokenizer.vocab_size()), skip_special) + "\n");
    return 0;
  }
  std::string out;
  for (const int32_t id : tokenizer.encode(text, add_bos)) out += (out.empty() ? "" : ",") + std::to_string(id);
  unicorn::io::write_stdout(out + "\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Gemma 3 tokenizer: text in, token ids out (or ids in, text out with --decode)"};
  std::string tokenizer_path, prompt;
  bool decode = false, add_bos = false, skip_special = false, chat = false, generation_prompt = false, json = false;
  app.add_option("-t,--tokenizer", tokenizer_path, "tokenizer.json or a GGUF file");
  app.add_option("-p,--prompt", prompt, "the text to encode (default: standard input)");
  app.add_flag("-d,--decode", decode, "input is token ids (comma- or space-separated; with --json an array of id arrays)");
  app.add_flag("--json", json, "read a JSON array of strings (or of id arrays, or of conversations) and print a JSON array");
  app.add_flag("--add-bos", add_bos, "start each encoding with <bos>");
  app.add_flag("--skip-special", skip_special, "when decoding, drop special tokens");
  app.add_flag("--chat", chat,
               "input is an array of conversations ([{\"role\": ..., \"content\": ...}, ...]); "
               "print their rendered text (Gemma 3 chat template) as strings");
  app.add_flag("--generation-prompt", generation_prompt, "with --chat: end with an open model turn");
  if (const auto status = unicorn::tools::parse(app, argc, argv, "unicorn-tokenize")) return *status;

  try {
    if (chat && !json) throw unicorn::Error("--chat reads conversations as JSON: add --json");
    if (!json) return plain(tokenizer_path, prompt, decode, add_bos, skip_special);
    if (!prompt.empty()) throw unicorn::Error("--prompt is plain text: give the texts on standard input with --json");
    nlohmann::json input;
    try {
      input = nlohmann::json::parse(read_stdin());
    } catch (const nlohmann::json::exception& e) {
      throw unicorn::Error(std::string("stdin is not valid JSON: ") + e.what());
    }
    if (!input.is_array()) throw unicorn::Error("stdin must hold a JSON array");

    nlohmann::json output = nlohmann::json::array();
    if (chat) {
      for (const auto& conversation : input) {
        std::vector<unicorn::text::ChatMessage> messages;
        for (const auto& m : conversation)
          messages.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
        output.push_back(unicorn::text::render_chat(messages, generation_prompt));
      }
      unicorn::io::write_stdout(output.dump() + "\n");
      return 0;
    }

    if (tokenizer_path.empty()) throw unicorn::Error("--tokenizer is required (tokenizer.json or GGUF)");
    const auto tokenizer = unicorn::text::load_tokenizer(tokenizer_path);
    for (const auto& item : input) {
      if (decode) {
        if (!item.is_array()) throw unicorn::Error("--decode: each element must be an array of ids");
        const auto ids = item.get<std::vector<int32_t>>();
        output.push_back(tokenizer.decode(ids, skip_special));
      } else {
        if (!item.is_string()) throw unicorn::Error("each element must be a string (or use --decode)");
        output.push_back(tokenizer.encode(item.get<std::string>(), add_bos));
      }
    }
    unicorn::io::write_stdout(output.dump() + "\n");
  } catch (const unicorn::Error& e) {
    std::cerr << "unicorn-tokenize: " << e.what() << "\n";
    return 1;
  } catch (const nlohmann::json::exception& e) {
    std::cerr << "unicorn-tokenize: bad input: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
