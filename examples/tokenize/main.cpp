// unicorn-tokenize — Gemma 3 tokenizer on the command line.
//
//   echo '["Hello world", "<start_of_turn>user\nHi"]' | unicorn-tokenize --tokenizer tokenizer.json
//   [[9259,1902],[105,2364,107,10979]]
//   echo '[[9259,1902]]' | unicorn-tokenize --tokenizer model.gguf --decode
//   ["Hello world"]
//
// --tokenizer takes a Hugging Face tokenizer.json or a GGUF file (its
// tokenizer.ggml.* vocabulary). Input strings are JSON, so they are valid
// Unicode; use --chat to render a conversation ([{"role","content"}, ...])
// with Gemma's chat template instead of encoding plain strings.
#include <CLI/CLI.hpp>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "unicorn/error.hpp"
#include "unicorn/io/file_output.hpp"
#include "unicorn/text/chat_template.hpp"
#include "unicorn/text/load_tokenizer.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Gemma 3 tokenizer: reads a JSON array on stdin, writes a JSON array on stdout"};
  std::string tokenizer_path;
  bool decode = false, add_bos = false, skip_special = false, chat = false, generation_prompt = false;
  app.add_option("-t,--tokenizer", tokenizer_path, "tokenizer.json or a GGUF file");
  app.add_flag("-d,--decode", decode, "input is an array of id arrays; print an array of strings");
  app.add_flag("--add-bos", add_bos, "start each encoding with <bos>");
  app.add_flag("--skip-special", skip_special, "when decoding, drop special tokens");
  app.add_flag("--chat", chat,
               "input is an array of conversations ([{\"role\": ..., \"content\": ...}, ...]); "
               "print their rendered text (Gemma 3 chat template) as strings");
  app.add_flag("--generation-prompt", generation_prompt, "with --chat: end with an open model turn");
  CLI11_PARSE(app, argc, argv);

  try {
    nlohmann::json input;
    try {
      std::ostringstream text;
      text << std::cin.rdbuf();
      input = nlohmann::json::parse(text.str());
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
