// version_test.cc -- Version, VersionEdit and ApplyEdit (version.h), and
// GT_DCHECK (dcheck.h).
//
// The cases are datadriven scripts, internal/core/testdata/version/* (datadriven.h;
// GT_REWRITE=1 rewrites their expected outputs). They apply edits to a
// Version made of real segment files in a temporary directory, and follow
// version retention: a Version a reader still holds (pin) keeps the files an
// edit removed readable, and a removed file is unlinked when the last
// Version holding it goes (Segment::MarkObsolete, as compaction marks its
// inputs).
//
// Commands:
//   define [levels=N]   an empty Version v0 (N levels, L0 included; default
//                       4) with an empty active MemGraph; drops every pin
//   edit                applies the edit the input lines describe, one
//                       change a line, and prints the new Version, or the
//                       error that makes the edit inapplicable
//                       (EditProblem) or the Version invalid
//                       (VersionProblem); a failed edit installs nothing:
//       add ID LN LO-HI [in] [seqs=A-B]   a new segment file (vertices LO
//                       and HI, their versions at seqs A and B; default the
//                       file number) at level N of the out- (or in-) edges
//       remove ID       the file leaves the Version; it is marked obsolete
//       freeze          the active MemGraph becomes imm, a new one active
//       drop-imm        imm is gone (a flush)
//       vdel V@SEQ      a vertex delete record
//   pin NAME            a reader holds the current Version
//   unpin NAME          and releases it
//   files               every file ever added: which Versions hold it and
//                       whether it is on disk
#include "version.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "datadriven.h"
#include "dcheck.h"
#include "test_util.h"

namespace {

using gt::Segment;
using gt::Version;
using gt::VersionEdit;

std::string Parse(const std::string &what, const std::string &w, uint64_t *a, uint64_t *b) {
  const size_t dash = w.find_first_of("-@");
  if (dash == std::string::npos) return "error: bad " + what + " \"" + w + "\"";
  *a = std::stoull(w.substr(0, dash));
  *b = std::stoull(w.substr(dash + 1));
  return "";
}

class VersionScript {
 public:
  std::string Run(const gt_test::TestData &d) {
    if (d.cmd == "define") return Define(d);
    if (d.cmd == "edit") return Edit(d);
    if (d.cmd == "pin") {
      pins_[d.args.at(0).key] = current_;
      return "pinned v" + std::to_string(current_->number) + " as " + d.args.at(0).key;
    }
    if (d.cmd == "unpin") {
      if (pins_.erase(d.args.at(0).key) == 0) return "error: no pin " + d.args.at(0).key;
      return Files();
    }
    if (d.cmd == "files") return Files();
    return "error: unknown command " + d.cmd;
  }

 private:
  std::string Define(const gt_test::TestData &d) {
    pins_.clear();
    current_.reset();
    ids_.clear();
    dir_ = std::make_unique<gt_test::TempDir>();
    auto v = std::make_shared<Version>();
    for (auto &t : v->trees) t.levels.resize(d.GetU64("levels", 4));
    v->active = std::make_shared<gt::MemGraph>(false, 64u << 10);
    v->vdel = std::make_shared<gt::VdelMap>();
    current_ = v;
    return Print(*current_);
  }

  // Writes segment id (vertices lo and hi, one edge each) and opens it.
  std::string Write(uint64_t id, uint32_t level, uint32_t dir, uint64_t lo, uint64_t hi, uint64_t seq_lo,
                    uint64_t seq_hi, std::shared_ptr<Segment> *out) {
    gt::SegmentBuilder b;
    const gt::Entry e_lo{1, gt::MakeVers(seq_lo, false), 1.0}, e_hi{2, gt::MakeVers(seq_hi, false), 1.0};
    b.AddVertex(lo, &e_lo, 1);
    if (hi != lo) b.AddVertex(hi, &e_hi, 1);
    gt::SegMeta m;
    gt::Status s = b.Finish(dir_->path(), id, level, dir, &m);
    if (s.ok()) s = Segment::Open(dir_->path(), id, out);
    return s.ok() ? "" : "error: writing file " + std::to_string(id) + ": " + s.msg;
  }

  std::string Edit(const gt_test::TestData &d) {
    VersionEdit e;
    std::shared_ptr<gt::VdelMap> vdel;
    for (const std::string &line : gt_test::SplitLines(d.input)) {
      const std::vector<std::string> w = gt_test::SplitWords(line);
      if (w[0] == "add" && w.size() >= 4) {
        const uint64_t id = std::stoull(w[1]);
        const uint32_t level = static_cast<uint32_t>(std::stoul(w[2].substr(1)));
        uint64_t lo, hi, seq_lo = id, seq_hi = id;
        std::string err = Parse("range", w[3], &lo, &hi);
        uint32_t dir = 0;
        for (size_t k = 4; err.empty() && k < w.size(); k++) {
          if (w[k] == "in")
            dir = 1;
          else if (w[k].rfind("seqs=", 0) == 0)
            err = Parse("seqs", w[k].substr(5), &seq_lo, &seq_hi);
          else
            err = "error: bad add argument " + w[k];
        }
        std::shared_ptr<Segment> seg;
        if (err.empty()) err = Write(id, level, dir, lo, hi, seq_lo, seq_hi, &seg);
        if (!err.empty()) return err;
        ids_.push_back(id);
        e.added.push_back(std::move(seg));
      } else if (w[0] == "remove" && w.size() == 2) {
        e.removed.push_back(std::stoull(w[1]));
      } else if (w[0] == "freeze") {
        e.freeze = true;
        e.new_active = std::make_shared<gt::MemGraph>(false, 64u << 10);
      } else if (w[0] == "drop-imm") {
        e.drop_imm = true;
      } else if (w[0] == "vdel" && w.size() == 2) {
        uint64_t v, seq;
        const std::string err = Parse("vdel", w[1], &v, &seq);
        if (!err.empty()) return err;
        if (!vdel) vdel = std::make_shared<gt::VdelMap>(*current_->vdel);
        vdel->Add(v, seq);
        e.vdel = vdel;
      } else {
        return "error: bad edit line: " + line;
      }
    }
    // The checks ApplyEdit makes under GT_DCHECK, as errors: the script
    // shows what an invalid edit would break instead of aborting.
    std::string why = gt::EditProblem(*current_, e);
    if (!why.empty()) return "error: " + why;
    if (e.freeze) current_->active->Freeze(0);
    std::shared_ptr<const Version> next = gt::NextVersion(*current_, e);
    why = gt::VersionProblem(*next);
    if (!why.empty()) return "error: " + why;
    next = gt::ApplyEdit(*current_, e);
    // As RunCompaction does: a removed file is unlinked once no Version
    // holds it.
    for (const auto *t : {&current_->trees[0], &current_->trees[1]}) {
      for (const auto &s : t->l0) MarkIfRemoved(e, *s);
      for (const auto &lv : t->levels)
        for (const auto &s : lv) MarkIfRemoved(e, *s);
    }
    current_ = next;
    return Print(*current_);
  }

  static void MarkIfRemoved(const VersionEdit &e, Segment &s) {
    if (std::find(e.removed.begin(), e.removed.end(), s.meta().id) != e.removed.end()) s.MarkObsolete();
  }

  static std::string Print(const Version &v) {
    std::string out = "v" + std::to_string(v.number) + ":";
    out += v.imm ? " active+imm" : " active";
    if (v.vdel && !v.vdel->empty()) out += ", " + std::to_string(v.vdel->size()) + " vertex delete(s)";
    out += "\n";
    for (int d = 0; d < 2; d++) {
      const gt::Tree &t = v.trees[d];
      auto file = [](const Segment &s) {
        const gt::SegMeta &m = s.meta();
        return " " + std::to_string(m.id) + ":" + std::to_string(m.min_src) + "-" + std::to_string(m.max_src);
      };
      const std::string tree = d == 0 ? "" : "in ";
      if (!t.l0.empty()) {
        out += "  " + tree + "L0:";
        for (const auto &s : t.l0) out += file(*s);
        out += "\n";
      }
      for (size_t i = 1; i < t.levels.size(); i++) {
        if (t.levels[i].empty()) continue;
        out += "  " + tree + "L" + std::to_string(i) + ":";
        for (const auto &s : t.levels[i]) out += file(*s);
        out += "\n";
      }
    }
    return out;
  }

  static bool Holds(const Version &v, uint64_t id) {
    auto has = [id](const std::vector<std::shared_ptr<Segment>> &fs) {
      return std::any_of(fs.begin(), fs.end(), [id](const auto &s) { return s->meta().id == id; });
    };
    for (const gt::Tree &t : v.trees) {
      if (has(t.l0)) return true;
      for (const auto &lv : t.levels)
        if (has(lv)) return true;
    }
    return false;
  }

  std::string Files() const {
    std::string out;
    std::vector<uint64_t> ids = ids_;
    std::sort(ids.begin(), ids.end());
    for (uint64_t id : ids) {
      std::string held;
      if (Holds(*current_, id)) held += " current v" + std::to_string(current_->number);
      for (const auto &p : pins_)
        if (Holds(*p.second, id)) held += " " + p.first + " v" + std::to_string(p.second->number);
      struct stat st;
      const bool on_disk = ::stat(dir_->Sub(gt::SegmentFileName(id)).c_str(), &st) == 0;
      out += std::to_string(id) + ":" + (held.empty() ? " held by none" : held) +
             (on_disk        ? ""
              : held.empty() ? ", deleted"
                             : ", MISSING") +
             "\n";
    }
    return out.empty() ? "no files" : out;
  }

  std::unique_ptr<gt_test::TempDir> dir_;
  std::shared_ptr<const Version> current_;
  std::map<std::string, std::shared_ptr<const Version>> pins_;
  std::vector<uint64_t> ids_;
};

TEST(VersionDataDriven, Scripts) {
  for (const char *name : {"edits", "retention"}) {
    SCOPED_TRACE(name);
    VersionScript script;
    gt_test::RunFile(gt_test::TestdataPath(std::string("version/") + name),
                     [&](const gt_test::TestData &d) { return script.Run(d); });
  }
}

#if GT_DCHECK_ENABLED
// A failed check names its file, line and condition, and aborts.
TEST(DcheckDeathTest, PrintsWhereAndAborts) {
  const int one = 1;
  EXPECT_DEATH(GT_DCHECK(one == 2), "version_test.cc:[0-9]+: GT_DCHECK\\(one == 2\\) failed");
  EXPECT_DEATH(GT_DCHECK_MSG(one == 2, "because " + std::to_string(one)), "GT_DCHECK\\(one == 2\\) failed: because 1");
}

// ApplyEdit checks what it installs: an L1 segment overlapping another.
TEST(DcheckDeathTest, ApplyEditRefusesOverlappingLevel) {
  gt_test::TempDir dir;
  Version base;
  for (auto &t : base.trees) t.levels.resize(3);
  base.vdel = std::make_shared<gt::VdelMap>();
  VersionEdit e;
  for (uint64_t id : {1, 2}) {
    gt::SegmentBuilder b;
    const gt::Entry en{1, gt::MakeVers(id, false), 1.0};
    b.AddVertex(10, &en, 1);
    b.AddVertex(20, &en, 1);
    gt::SegMeta m;
    ASSERT_TRUE(b.Finish(dir.path(), id, 1, 0, &m).ok());
    std::shared_ptr<Segment> s;
    ASSERT_TRUE(Segment::Open(dir.path(), id, &s).ok());
    e.added.push_back(s);
  }
  EXPECT_DEATH(gt::ApplyEdit(base, e), "L1 segments overlap or are out of order");
}
#else
TEST(DcheckTest, CompiledOutDoesNotEvaluate) {
  int evaluated = 0;
  GT_DCHECK(++evaluated == 100);
  EXPECT_EQ(evaluated, 0);
}
#endif

}  // namespace
