// datadriven.h -- pebble-style datadriven tests, hosted by GoogleTest.
//
// A test file under internal/core/testdata/ is a sequence of blocks, blank lines
// between them; a line starting with '#' outside a block is a comment:
//
//   command arg key=value key=(a,b)
//   input line
//   ...
//   ----
//   expected output line
//   ...
//
// RunFile runs each block's command through a callback and compares what it
// returns with the expected output (trailing newlines ignored; an output
// must not hold a blank line, which would end the block). With GT_REWRITE=1
// in the environment it writes the actual outputs into the file instead,
// keeping everything else as it was.
//
// The files are found through GT_TESTDATA_DIR, the source tree's
// internal/core/testdata (a compile definition from CMakeLists.txt), so the test binary
// runs from any working directory.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace gt_test {

struct CmdArg {
  std::string key;
  std::vector<std::string> vals;  // key=v: {v}; key=(a,b): {a, b}; key: {}
};

struct TestData {
  std::string pos;  // file:line of the command, for failure messages
  std::string cmd;
  std::vector<CmdArg> args;
  std::string input;     // the lines between the command and "----"
  std::string expected;  // the lines after "----"

  bool Has(const std::string &key) const {
    for (const CmdArg &a : args)
      if (a.key == key) return true;
    return false;
  }
  // The value of key=v, or def when absent.
  std::string Get(const std::string &key, const std::string &def = "") const {
    for (const CmdArg &a : args)
      if (a.key == key) return a.vals.empty() ? "" : a.vals[0];
    return def;
  }
  uint64_t GetU64(const std::string &key, uint64_t def) const {
    const std::string v = Get(key);
    return v.empty() ? def : std::strtoull(v.c_str(), nullptr, 10);
  }
  std::vector<std::string> GetList(const std::string &key) const {
    for (const CmdArg &a : args)
      if (a.key == key) return a.vals;
    return {};
  }
};

inline std::vector<std::string> SplitLines(const std::string &s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

inline std::vector<std::string> SplitWords(const std::string &s, char sep = ' ') {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep || (sep == ' ' && c == '\t')) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

inline std::string TrimTrailingNewlines(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

inline void ParseCommand(const std::string &line, TestData *d) {
  std::vector<std::string> words = SplitWords(line);
  d->cmd = words.empty() ? "" : words[0];
  for (size_t i = 1; i < words.size(); i++) {
    CmdArg a;
    const size_t eq = words[i].find('=');
    a.key = words[i].substr(0, eq);
    if (eq != std::string::npos) {
      std::string v = words[i].substr(eq + 1);
      if (v.size() >= 2 && v.front() == '(' && v.back() == ')')
        a.vals = SplitWords(v.substr(1, v.size() - 2), ',');
      else
        a.vals.push_back(v);
    }
    d->args.push_back(a);
  }
}

// Runs every block of path through run (which returns the block's output).
inline void RunFile(const std::string &path, const std::function<std::string(const TestData &)> &run) {
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::vector<std::string> lines = SplitLines(ss.str());
  const char *rw = std::getenv("GT_REWRITE");
  const bool rewrite = rw != nullptr && *rw != '\0' && std::string(rw) != "0";
  std::string out;  // the rewritten file
  size_t i = 0;
  while (i < lines.size()) {
    const std::string &line = lines[i];
    if (line.empty() || line[0] == '#') {
      out += line + "\n";
      i++;
      continue;
    }
    TestData d;
    d.pos = path + ":" + std::to_string(i + 1);
    ParseCommand(line, &d);
    out += line + "\n";
    i++;
    while (i < lines.size() && lines[i] != "----") {
      ASSERT_FALSE(lines[i].empty()) << d.pos << ": a blank line before \"----\"";
      d.input += lines[i] + "\n";
      out += lines[i] + "\n";
      i++;
    }
    ASSERT_LT(i, lines.size()) << d.pos << ": no \"----\" after the command";
    out += "----\n";
    i++;
    while (i < lines.size() && !lines[i].empty()) {
      d.expected += lines[i] + "\n";
      i++;
    }
    const std::string got = TrimTrailingNewlines(run(d));
    EXPECT_EQ(got.find("\n\n"), std::string::npos) << d.pos << ": output holds a blank line:\n" << got;
    if (!got.empty()) out += got + "\n";
    if (!rewrite) {
      EXPECT_EQ(got, TrimTrailingNewlines(d.expected)) << d.pos << ": " << line << "\n(GT_REWRITE=1 rewrites)";
    }
  }
  if (rewrite) {
    std::ofstream f(path, std::ios::trunc);
    ASSERT_TRUE(f.good()) << "cannot write " << path;
    f << out;
  }
}

inline std::string TestdataPath(const std::string &name) { return std::string(GT_TESTDATA_DIR) + "/" + name; }

}  // namespace gt_test
