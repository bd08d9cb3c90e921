#include "tokenizer/sentencepiece_bpe.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/sentencepiece_pieces.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace lumen::tokenizer {

namespace {

// One symbol of a chunk: a byte range of the escaped text, linked to its live neighbours. A
// symbol merged into its left neighbour gets length 0 and drops out of the list.
struct Symbol {
  uint32_t start;
  uint32_t length;
  int32_t prev;
  int32_t next;
  int32_t id;  // the piece the bytes spell, or kNoToken
};

// A candidate merge of two adjacent symbols. It goes stale when either side changes; `length`
// (the sum of both sides when it was queued) tells, since symbols only ever grow.
struct Candidate {
  float score;
  int32_t left;
  int32_t right;
  int32_t id;
  uint32_t length;
};

// Max-heap order: the higher score first, and on a tie the leftmost pair.
struct CandidateOrder {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

using Unmerge = std::unordered_map<std::string_view, std::pair<std::string_view, std::string_view>>;

// Encodes one escaped segment, chunk by chunk, reusing its buffers across chunks.
class Session {
 public:
  Session(const SentencePieceIndex& index, std::string_view text, std::vector<int32_t>& out)
      : index_(index), text_(text), out_(out), first_(out.size()) {}

  // Greedy merging over the code points of text_[begin, end) (O(n log n) with the heap), then
  // the ids of what is left.
  void run(size_t begin, size_t end) {
    split(begin, end);
    for (size_t i = 1; i < symbols_.size(); ++i) {
      consider(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
    }
    while (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), CandidateOrder{});
      Candidate best = heap_.back();
      heap_.pop_back();
      Symbol& left = symbols_[static_cast<size_t>(best.left)];
      Symbol& right = symbols_[static_cast<size_t>(best.right)];
      if (left.length == 0 || right.length == 0 || left.length + right.length != best.length) {
        continue;  // stale: one side has been merged with something else since
      }
      left.length += right.length;
      left.id = best.id;
      right.length = 0;
      left.next = right.next;
      if (right.next != -1) symbols_[static_cast<size_t>(right.next)].prev = best.left;
      consider(left.prev, best.left);
      consider(best.left, left.next);
    }
    for (int32_t i = 0; i != -1; i = symbols_[static_cast<size_t>(i)].next) {
      const Symbol& symbol = symbols_[static_cast<size_t>(i)];
      emit(text_.substr(symbol.start, symbol.length), symbol.id);
    }
  }

 private:
  // Code points, each a symbol (a byte that starts no well-formed sequence stands alone).
  void split(size_t begin, size_t end) {
    symbols_.clear();
    std::string_view chunk = text_.substr(0, end);
    for (size_t pos = begin; pos < end;) {
      size_t length = symbol_length(chunk, pos);
      auto index = static_cast<int32_t>(symbols_.size());
      symbols_.push_back({static_cast<uint32_t>(pos), static_cast<uint32_t>(length), index - 1,
                          index + 1, index_.find(text_.substr(pos, length))});
      pos += length;
    }
    symbols_.back().next = -1;
  }

  void consider(int32_t left_index, int32_t right_index) {
    if (left_index == -1 || right_index == -1) return;
    const Symbol& left = symbols_[static_cast<size_t>(left_index)];
    const Symbol& right = symbols_[static_cast<size_t>(right_index)];
    std::string_view joined = text_.substr(left.start, left.length + right.length);
    int32_t id = index_.find(joined);
    if (id == kNoToken) return;
    heap_.push_back({index_.score(id), left_index, right_index, id,
                     static_cast<uint32_t>(joined.size())});
    std::push_heap(heap_.begin(), heap_.end(), CandidateOrder{});
    if (index_.has_unused() && index_.is_unused(id)) {
      // SentencePiece's rev_merge: the latest split seen for an Unused piece's text.
      unmerge_.insert_or_assign(joined, std::pair(text_.substr(left.start, left.length),
                                                  text_.substr(right.start, right.length)));
    }
  }

  // A final symbol's piece, the pieces an Unused piece was made of, or the fallback.
  void emit(std::string_view piece, int32_t id) {
    if (id == kNoToken) {
      emit_fallback(piece);
      return;
    }
    if (index_.is_unused(id)) {
      auto it = unmerge_.find(piece);
      if (it != unmerge_.end()) {
        for (std::string_view part : {it->second.first, it->second.second}) {
          emit(part, index_.find(part));
        }
        return;
      }
    }
    out_.push_back(id);
  }

  // One <0xXX> token per byte; without byte tokens one unknown token for a run of unknown
  // characters (SentencePiece fuses them, as does Hugging Face's fuse_unk for these models).
  void emit_fallback(std::string_view piece) {
    bool have_bytes = std::all_of(piece.begin(), piece.end(), [&](char c) {
      return index_.byte_token(static_cast<unsigned char>(c)) != kNoToken;
    });
    if (have_bytes) {
      for (char c : piece) out_.push_back(index_.byte_token(static_cast<unsigned char>(c)));
      return;
    }
    int32_t unknown = index_.unknown();
    if (unknown == kNoToken) {
      fail("cannot encode a {}-byte character: the vocabulary has neither byte tokens for it "
           "nor an unknown token", piece.size());
    }
    // Within this segment the unknown id only ever comes from here (merges never form it).
    if (out_.size() > first_ && out_.back() == unknown) return;
    out_.push_back(unknown);
  }

  const SentencePieceIndex& index_;
  std::string_view text_;
  std::vector<int32_t>& out_;
  size_t first_;  // where this segment's ids start in out_
  std::vector<Symbol> symbols_;
  std::vector<Candidate> heap_;
  Unmerge unmerge_;
};

// The code point just before `pos`, cut as Session::split cuts (a lone bad byte counts as one).
std::string_view code_point_before(std::string_view text, size_t pos) {
  size_t lead = pos - 1;
  while (lead > 0 && pos - lead < 4 && (static_cast<unsigned char>(text[lead]) & 0xC0) == 0x80) {
    --lead;
  }
  if (valid_sequence_length(text.substr(0, pos), lead) == pos - lead) {
    return text.substr(lead, pos - lead);
  }
  return text.substr(pos - 1, 1);
}

class SentencePieceBpe final : public TokenizerModel {
 public:
  explicit SentencePieceBpe(std::shared_ptr<const Vocab> vocab)
      : vocab_(std::move(vocab)), index_(*vocab_) {}

  void encode(std::string_view text, bool starts_text, std::vector<int32_t>& out) const override {
    if (text.empty()) return;
    std::string escaped = escape(text, starts_text && vocab_->add_space_prefix);
    if (escaped.size() > std::numeric_limits<int32_t>::max()) {
      fail("text of {} bytes is too long to tokenize in one piece", text.size());
    }
    Session session(index_, escaped, out);
    if (index_.has_unused()) {
      // Resegmenting an Unused piece uses the latest split seen for its text anywhere in the
      // segment, so the segment must be merged as one.
      session.run(0, escaped.size());
      return;
    }
    // Cutting the segment where no merge can cross gives the same result as merging it whole
    // (merges on either side never meet) and keeps the heap small and in cache.
    for (size_t begin = 0; begin < escaped.size();) {
      size_t end = chunk_end(escaped, begin);
      session.run(begin, end);
      begin = end;
    }
  }

  std::string token_bytes(int32_t id) const override {
    const Vocab& v = *vocab_;
    if (id < 0 || static_cast<size_t>(id) >= v.size()) {
      fail("token id {} is outside the {}-token vocabulary", id, v.size());
    }
    const std::string& text = v.tokens[static_cast<size_t>(id)];
    switch (v.types[static_cast<size_t>(id)]) {
      case TokenType::Normal: return unescape(text);
      case TokenType::Byte: return std::string(1, static_cast<char>(byte_token_value(text)));
      case TokenType::UserDefined:
      case TokenType::Control:
      case TokenType::Unknown: return text;
      case TokenType::Unused:
      case TokenType::Undefined: return {};
    }
    return {};
  }

 private:
  // The next U+2581 after `begin` that no merge can join to the code point before it.
  size_t chunk_end(std::string_view text, size_t begin) const {
    for (size_t pos = text.find(kSpaceMark, begin + 1); pos != std::string_view::npos;
         pos = text.find(kSpaceMark, pos + 1)) {
      if (index_.may_cut_between(code_point_before(text, pos))) return pos;
    }
    return text.size();
  }

  static std::string escape(std::string_view text, bool dummy_prefix) {
    std::string escaped;
    escaped.reserve(text.size() + (dummy_prefix ? kSpaceMark.size() : 0) +
                    2 * static_cast<size_t>(std::count(text.begin(), text.end(), ' ')));
    if (dummy_prefix) escaped += kSpaceMark;
    for (char c : text) {
      if (c == ' ') {
        escaped += kSpaceMark;
      } else {
        escaped += c;
      }
    }
    return escaped;
  }

  static std::string unescape(std::string_view piece) {
    std::string text;
    text.reserve(piece.size());
    for (size_t pos = 0; pos < piece.size();) {
      size_t mark = std::min(piece.find(kSpaceMark, pos), piece.size());
      text.append(piece.substr(pos, mark - pos));
      if (mark == piece.size()) break;
      text += ' ';
      pos = mark + kSpaceMark.size();
    }
    return text;
  }

  std::shared_ptr<const Vocab> vocab_;
  SentencePieceIndex index_;  // views vocab_'s texts, so declared after it
};

}  // namespace

std::unique_ptr<TokenizerModel> make_sentencepiece_bpe(std::shared_ptr<const Vocab> vocab) {
  return std::make_unique<SentencePieceBpe>(std::move(vocab));
}

}  // namespace lumen::tokenizer
