// The correctness matrix of the GPU checks (correctness-matrix.txt beside this file; its top describes
// the format), parsed and expanded exactly as the Java suite's CorrectnessMatrix does: the same
// blocks, the same groups (variant, ranks) in order of first appearance, the same cases in each.
// Host-only C++17, no CUDA: gc_test reads it, and matrix_list (a plain C++ build) prints its
// expansion so a JVM test can compare the two parsers without a GPU.
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace gcm {

// Names in the orders of dev.gpucoll.api's Collective, DataType and ReduceOp (= GC_DT_*, GC_OP_*).
enum Coll { kAllReduce, kReduceScatter, kAllGather, kAllToAll, kAllToAllv, kBroadcast, kBarrier, kColls };
inline const char* const kCollName[] = {"allReduce", "reduceScatter", "allGather", "allToAll", "allToAllv", "broadcast", "barrier"};
inline const char* const kTypeName[] = {"f32", "f64", "f16", "bf16", "i32", "i64", "i8", "u8"};
inline const uint32_t kTypeBytes[] = {4, 8, 2, 2, 4, 8, 1, 1};
constexpr int kTypes = 8;
inline const char* const kOpName[] = {"sum", "prod", "min", "max", "avg"};
constexpr int kOps = 5;
enum Root { kRootRandom, kRootLast, kRootMiddle };

inline bool isReduction(int c) { return c == kAllReduce || c == kReduceScatter; }

struct Count {
  uint64_t amount;  // elements, or bytes when `bytes`
  bool bytes, perRank, fullOnly;
  uint64_t elements(int type, int n) const {
    const uint64_t e = bytes ? amount / kTypeBytes[type] : amount;
    return perRank ? e / n : e;
  }
};

struct Block {
  int line;
  std::string variant;
  std::vector<std::pair<int, bool>> ranks;  // group size, full matrix only
  std::vector<int> colls, types, ops;
  std::vector<Count> counts;
  bool inPlace = false;
  Root root = kRootRandom;
};

// One case; the broadcast root and the allToAllv count table are the running program's choice.
struct Case {
  int coll, type, op;
  uint64_t count;  // the API's count argument; allToAllv: the largest entry of the count table
  bool inPlace;
  Root root;
};

struct Group {
  std::string variant;  // "auto" or a kernel variant
  int ranks;
  std::vector<Case> cases;
};

inline std::runtime_error bad(int line, const std::string& what) {
  return std::runtime_error("correctness matrix line " + std::to_string(line) + ": " + what);
}

inline int indexOf(const char* const* names, int n, const std::string& s) {
  for (int i = 0; i < n; ++i)
    if (s == names[i]) return i;
  return -1;
}

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

inline uint64_t number(const std::string& s) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) throw std::invalid_argument("not a number");
  return std::stoull(s);
}

inline Block parseBlock(int no, const std::string& line) {
  std::vector<std::string> f;
  {
    std::istringstream in(line);
    for (std::string w; in >> w;) f.push_back(w);
  }
  if (f.size() < 6)
    throw bad(no, "expected variant, ranks, collectives, types, ops and counts; got " + std::to_string(f.size()) + " fields");
  Block b;
  b.line = no;
  b.variant = f[0];
  for (char& ch : b.variant) ch = (char)std::tolower((unsigned char)ch);
  auto item = [&](const char* field, const std::string& s, auto parse) {
    try {
      return parse(s);
    } catch (const std::exception& e) {
      throw bad(no, std::string(field) + " item '" + s + "': " + e.what());
    }
  };
  for (const std::string& s : split(f[1], ',')) {
    const bool full = !s.empty() && s.back() == '*';
    b.ranks.emplace_back(item("ranks", s, [&](const std::string&) {
      const uint64_t n = number(full ? s.substr(0, s.size() - 1) : s);
      if (n < 1) throw std::invalid_argument("a group has at least 1 rank");
      return (int)n;
    }), full);
  }
  for (const std::string& s : split(f[2], ','))
    b.colls.push_back(item("collectives", s, [](const std::string& v) {
      const int c = indexOf(kCollName, kColls, v);
      if (c < 0) throw std::invalid_argument("unknown collective");
      return c;
    }));
  bool barrierOnly = true, reductions = false, movement = false;
  for (int c : b.colls) {
    barrierOnly = barrierOnly && c == kBarrier;
    (isReduction(c) ? reductions : movement) = true;
  }
  if (reductions && movement) throw bad(no, "reductions and data movement in one line: their ops differ; write two lines");
  if (f[3] == "-") {
    if (!barrierOnly) throw bad(no, "types '-' is for barrier only");
    b.types.push_back(4);  // int32, as the Java suite
  } else {
    for (const std::string& s : split(f[3], ','))
      b.types.push_back(item("types", s, [](const std::string& v) {
        const int t = indexOf(kTypeName, kTypes, v);
        if (t < 0) throw std::invalid_argument("unknown type; expected one of f32 f64 f16 bf16 i32 i64 i8 u8");
        return t;
      }));
  }
  if (f[4] == "-") {
    if (reductions) throw bad(no, "a reduction needs ops");
    b.ops.push_back(0);
  } else {
    if (!reductions) throw bad(no, "ops are for allReduce and reduceScatter; write '-'");
    for (const std::string& s : split(f[4], ','))
      b.ops.push_back(item("ops", s, [](const std::string& v) {
        std::string l = v;
        for (char& ch : l) ch = (char)std::tolower((unsigned char)ch);
        const int o = indexOf(kOpName, kOps, l);
        if (o < 0) throw std::invalid_argument("unknown op");
        return o;
      }));
  }
  for (const std::string& s : split(f[5], ','))
    b.counts.push_back(item("counts", s, [](const std::string& s0) {
      Count c{};
      std::string v = s0;
      c.fullOnly = !v.empty() && v.back() == '*';
      if (c.fullOnly) v.pop_back();
      c.perRank = v.size() >= 2 && v.compare(v.size() - 2, 2, "/n") == 0;
      if (c.perRank) v.resize(v.size() - 2);
      auto ends = [&](const char* u) { const std::string x(u); return v.size() >= x.size() && v.compare(v.size() - x.size(), x.size(), x) == 0; };
      const uint64_t unit = ends("MiB") ? 1u << 20 : ends("KiB") ? 1u << 10 : ends("B") ? 1 : 0;
      if (unit) v.resize(v.size() - (unit == 1 ? 1 : 3));
      const uint64_t n = number(v);
      c.bytes = unit != 0;
      c.amount = unit ? n * unit : n;
      return c;
    }));
  for (size_t i = 6; i < f.size(); ++i) {
    if (f[i] == "in-place") {
      b.inPlace = true;
    } else if (f[i].rfind("root=", 0) == 0) {
      const std::string r = f[i].substr(5);
      if (r == "random") b.root = kRootRandom;
      else if (r == "last") b.root = kRootLast;
      else if (r == "middle") b.root = kRootMiddle;
      else throw bad(no, "root must be random, last or middle: " + f[i]);
    } else {
      throw bad(no, "unknown option " + f[i] + "; expected in-place or root=random|last|middle");
    }
  }
  return b;
}

/**
 * Whether a line's ops are MAXLOC/MINLOC (value-index pairs, types like f64:i32): parse() leaves
 * them out (their cases are pairGroups', not Block's) and so does list(), as the Java expansion
 * of the plain cases does.
 */
inline bool isPairLine(const std::string& line) {
  std::istringstream in(line);
  std::string field;
  for (int i = 0; i < 5; ++i)
    if (!(in >> field)) return false;
  for (std::string op : split(field, ',')) {
    for (char& ch : op) ch = (char)std::tolower((unsigned char)ch);
    if (op == "maxloc" || op == "minloc") return true;
  }
  return false;
}

/** @throws std::runtime_error naming the line and the field that does not parse */
inline std::vector<Block> parse(const std::string& text) {
  std::vector<Block> blocks;
  std::istringstream in(text);
  int no = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++no;
    std::string line = raw.substr(0, raw.find('#'));
    const size_t a = line.find_first_not_of(" \t\r"), z = line.find_last_not_of(" \t\r");
    if (a != std::string::npos && !isPairLine(line)) blocks.push_back(parseBlock(no, line.substr(a, z - a + 1)));
  }
  return blocks;
}

/** The file's text. @throws std::runtime_error when it cannot be read */
inline std::string readText(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read the correctness matrix " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/** The file's blocks. @throws std::runtime_error when it cannot be read or holds no block */
inline std::vector<Block> load(const std::string& path) {
  std::vector<Block> blocks = parse(readText(path));
  if (blocks.empty()) throw std::runtime_error("the correctness matrix " + path + " holds no block");
  return blocks;
}

/** Every case per group, as the Java suite's: order ranks, collective, type, count, op; quick leaves out '*'. */
inline std::vector<Group> expand(const std::vector<Block>& blocks, bool quick) {
  std::vector<Group> out;
  for (const Block& b : blocks)
    for (const auto& [n, fullOnly] : b.ranks) {
      if (quick && fullOnly) continue;
      Group* g = nullptr;
      for (Group& x : out)
        if (x.variant == b.variant && x.ranks == n) g = &x;
      if (!g) g = &out.emplace_back(Group{b.variant, n, {}});
      for (int c : b.colls)
        for (int t : b.types)
          for (const Count& count : b.counts) {
            if (quick && count.fullOnly) continue;
            for (int op : b.ops)
              g->cases.push_back(Case{c, t, op, c == kBarrier ? 0 : count.elements(t, n),
                                      c == kBarrier ? false : b.inPlace, b.root});
          }
    }
  std::vector<Group> nonEmpty;
  for (Group& g : out)
    if (!g.cases.empty()) nonEmpty.push_back(std::move(g));
  return nonEmpty;
}

// ---- MAXLOC/MINLOC lines: pair types in dev.gpucoll.api.PairType's order (= GC_PT_*), ops maxloc, minloc

inline const char* const kPairTypeName[] = {"f32:i32", "f32:i64", "f64:i32", "f64:i64", "i32:i32", "i32:i64", "i64:i32", "i64:i64"};
constexpr int kPairTypes = 8;
inline const char* const kLocOpName[] = {"maxloc", "minloc"};

struct PairCase {
  int type, op;  // GC_PT_*, GC_LOC_*
  uint64_t count;  // pairs per rank
  bool inPlace;
};

struct PairGroup {
  int ranks;
  std::vector<PairCase> cases;
};

/**
 * Every MAXLOC/MINLOC case of the text per group size, groups in order of first appearance, cases in
 * the order type, count, op (as CorrectnessMatrix.pairCases; the variant field does not matter: one
 * kernel reduces pairs); quick leaves out '*' items.
 */
inline std::vector<PairGroup> pairGroups(const std::string& text, bool quick) {
  std::vector<PairGroup> out;
  std::istringstream in(text);
  int no = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++no;
    const std::string line = raw.substr(0, raw.find('#'));
    if (!isPairLine(line)) continue;
    std::vector<std::string> f;
    std::istringstream words(line);
    for (std::string w; words >> w;) f.push_back(w);
    if (f.size() < 6 || f[2] != "allReduce") throw bad(no, "a maxloc/minloc line is an allReduce line of six fields");
    auto items = [&](const std::string& field, auto parse) {
      std::vector<std::pair<int64_t, bool>> v;  // value, full matrix only
      for (std::string s : split(field, ',')) {
        const bool full = !s.empty() && s.back() == '*';
        if (full) s.pop_back();
        const int64_t x = parse(s);
        if (x < 0) throw bad(no, "item '" + s + "' does not parse");
        if (!(quick && full)) v.emplace_back(x, full);
      }
      return v;
    };
    auto named = [&](const char* const* names, int n) {
      return [=](const std::string& s) { return (int64_t)indexOf(names, n, s); };
    };
    auto num = [](const std::string& s) { try { return (int64_t)number(s); } catch (const std::exception&) { return (int64_t)-1; } };
    const auto ranks = items(f[1], num), types = items(f[3], named(kPairTypeName, kPairTypes)),
               ops = items(f[4], named(kLocOpName, 2)), counts = items(f[5], num);
    const bool inPlace = f.size() > 6 && f[6] == "in-place";
    for (const auto& [n, fullN] : ranks) {
      PairGroup* g = nullptr;
      for (PairGroup& x : out)
        if (x.ranks == (int)n) g = &x;
      if (!g) g = &out.emplace_back(PairGroup{(int)n, {}});
      for (const auto& [t, fullT] : types)
        for (const auto& [count, fullC] : counts)
          for (const auto& [op, fullO] : ops) g->cases.push_back(PairCase{(int)t, (int)op, (uint64_t)count, inPlace});
    }
  }
  return out;
}

inline const char* rootName(Root r) { return r == kRootLast ? "last" : r == kRootMiddle ? "middle" : "random"; }

/**
 * Per group a line "group <variant> <ranks> <cases>", then one line per case "case <collective>
 * <type> <op> <count> <in-place 0|1> <root>" (type int32 and op sum where the matrix says '-'); at
 * the end "total <cases> <groups>". The JVM test compares it with the Java expansion line by line.
 */
inline void list(const std::vector<Group>& groups, FILE* out) {
  size_t total = 0;
  for (const Group& g : groups) {
    std::fprintf(out, "group %s %d %zu\n", g.variant.c_str(), g.ranks, g.cases.size());
    for (const Case& c : g.cases)
      std::fprintf(out, "case %s %s %s %llu %d %s\n", kCollName[c.coll], kTypeName[c.type], kOpName[c.op],
                   (unsigned long long)c.count, c.inPlace ? 1 : 0, rootName(c.root));
    total += g.cases.size();
  }
  std::fprintf(out, "total %zu %zu\n", total, groups.size());
}

}  // namespace gcm
