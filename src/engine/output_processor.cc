#include "engine/output_processor.h"

#include <algorithm>
#include <chrono>
#include <limits>

namespace lumen::engine {

OutputProcessor::OutputProcessor(Scheduler& scheduler_, Speculation& speculation_,
                                 const tokenizer::Tokenizer& tokenizer_, std::atomic<uint64_t>& next_id_,
                                 std::atomic<int64_t>& unfinished_, const int64_t& max_model_len_,
                                 int64_t vocab_size_)
    : scheduler(scheduler_),
      speculation(speculation_),
      tokenizer(tokenizer_),
      next_id(next_id_),
      unfinished(unfinished_),
      max_model_len(max_model_len_),
      vocab_size(vocab_size_) {}

void OutputProcessor::admit(std::unique_ptr<RequestGroup> group) {
  Completion& first = *group->completions.front();
  scheduler.add(&first.seq);
  live.emplace(first.seq.id, &first);
  const uint64_t id = group->id;
  groups.emplace(id, std::move(group));
}

void OutputProcessor::abort(uint64_t request_id) {
  if (auto it = groups.find(request_id); it != groups.end() && !it->second->ended) {
    end_group(*it->second, FinishReason::Abort);
  }
}

void OutputProcessor::abort_all() {
  for (auto& [id, group] : groups) {
    for (auto& stream : group->streams) stream->finish(FinishReason::Abort);
  }
}

void OutputProcessor::drop_ended() {
  for (uint64_t id : ended) {
    auto it = groups.find(id);
    if (it == groups.end()) continue;
    if (mask_job_running(*it->second)) draining.push_back(std::move(it->second));
    groups.erase(it);
  }
  ended.clear();
  std::erase_if(draining, [this](const std::unique_ptr<RequestGroup>& g) { return !mask_job_running(*g); });
}

std::optional<uint64_t> OutputProcessor::request_of(uint64_t sequence_id) const {
  const auto it = live.find(sequence_id);
  if (it == live.end()) return std::nullopt;
  return it->second->group->id;
}

void OutputProcessor::retire(Completion& c, FinishReason reason) {
  scheduler.remove(&c.seq);
  live.erase(c.seq.id);
  c.finish = reason;
  --c.group->n_running;
}

void OutputProcessor::end_group(RequestGroup& g, FinishReason reason, const std::string& error) {
  for (auto& c : g.completions) {
    if (!c->finish) retire(*c, reason);
  }
  for (auto& stream : g.streams) stream->finish(reason, error);  // no-op where it already ended
  g.ended = true;
  unfinished.fetch_sub(1);
  ended.push_back(g.id);
}

// One completion ends (Sample, BestOf).
void OutputProcessor::finish_completion(Completion& c, FinishReason reason) {
  RequestGroup& g = *c.group;
  retire(c, reason);
  if (g.mode == GroupMode::Sample) g.streams[static_cast<size_t>(c.index)]->finish(reason);
  if (g.n_running > 0) return;
  if (g.mode == GroupMode::BestOf) deliver_best_of(g);
  // Streams that have not ended yet (a request that ended before it forked) end like it.
  end_group(g, reason);
}

void OutputProcessor::deliver_best_of(RequestGroup& g) {
  const std::vector<const Completion*> best = best_completions(g);
  for (size_t j = 0; j < best.size(); ++j) {
    for (const GeneratedToken& t : best[j]->held) g.streams[j]->push(t);
    g.streams[j]->finish(*best[j]->finish);
  }
}

// Streams one sampled token (with its text) and says whether the completion ends with it.
std::optional<FinishReason> OutputProcessor::emit(Completion& c, const sampling::SampleResult& result) {
  c.sampler.accept(result.token);
  c.seq.tokens.push_back(result.token);
  ++n_generated;
  const bool stop_strings_apply = c.stop_condition.past_min_tokens();
  std::optional<FinishReason> finish = c.stop_condition.check(result.token);
  // A stop token's own text is left out where the request asks (the text held back before it
  // still comes out with the flush below).
  const bool stop_token = finish == FinishReason::Stop;
  const bool silent = stop_token && !c.group->params.stop_token_text;
  GeneratedToken out{result.token, result.logprob, {}, silent ? std::string() : c.detokenizer.push(result.token)};
  for (const auto& alt : result.top) out.top.push_back({alt.token, alt.logprob});
  // A grammar that took its end-of-generation token allows nothing after it: with ignore_eos
  // the sequence would have no token left to sample.
  if (!finish && c.sampler.mask_complete()) finish = FinishReason::Stop;
  if (c.stop_strings && stop_strings_apply) {
    sampling::StopStringMatcher::Step step = c.stop_strings->push(out.text);
    out.text = std::move(step.text);
    if (step.stopped) finish = FinishReason::Stop;
  }
  // A sequence that shifts its context goes on (the scheduler drops old positions first).
  if (!finish && !c.seq.may_shift && c.seq.position_of(std::ssize(c.seq.tokens)) >= max_model_len) {
    finish = FinishReason::Length;
  }
  if (finish && !(c.stop_strings && c.stop_strings->stopped())) {
    // The end of the stream: whatever was held back for a possible stop string or an
    // unfinished character goes out with the last token.
    std::string tail = c.detokenizer.flush();
    if (c.stop_strings) {
      sampling::StopStringMatcher::Step step = c.stop_strings->push(tail);
      tail = std::move(step.text) + c.stop_strings->flush();
    }
    out.text += tail;
  }
  RequestGroup& g = *c.group;
  if (g.mode == GroupMode::BestOf) {
    // Ranked on the log-probabilities; reported only when asked for.
    c.sum_logprob += static_cast<double>(result.logprob);
    if (!g.params.logprobs) {
      out.logprob = std::numeric_limits<float>::quiet_NaN();
      out.top.clear();
    }
    c.held.push_back(std::move(out));
  } else {
    g.streams[static_cast<size_t>(c.index)]->push(std::move(out));
  }
  return finish;
}

void OutputProcessor::sample_and_emit(Completion& c, std::span<const float> row) {
  const sampling::SampleResult result = c.sampler.sample(row, workspace);
  if (std::optional<FinishReason> finish = emit(c, result)) finish_completion(c, *finish);
}

Completion& OutputProcessor::fork(Completion& parent, int32_t index) {
  RequestGroup& g = *parent.group;
  auto child = std::make_unique<Completion>(parent, next_id.fetch_add(1), index, tokenizer);
  Completion& c = *child;
  g.completions.push_back(std::move(child));
  ++g.n_running;
  scheduler.add_fork(&c.seq, &parent.seq);
  live.emplace(c.seq.id, &c);
  return c;
}

void OutputProcessor::on_logits(Completion& c, std::span<const float> row) {
  RequestGroup& g = *c.group;
  if (g.mode == GroupMode::Beam) {
    beam_logits(c, row);
    return;
  }
  for (Completion* sibling : fork_choices(c)) sample_and_emit(*sibling, row);
  sample_and_emit(c, row);
}

std::vector<Completion*> OutputProcessor::fork_choices(Completion& c) {
  RequestGroup& g = *c.group;
  std::vector<Completion*> siblings;
  if (g.forked) return siblings;
  // The prompt is computed: the other completions start here, sharing its blocks.
  g.forked = true;
  c.seq.seats = 1;
  for (int32_t i = 1; i < g.width; ++i) siblings.push_back(&fork(c, i));
  return siblings;
}

void OutputProcessor::choose_row_forms(const StepPlan& plan, std::vector<ChunkForm>& forms) const {
  forms.assign(plan.chunks.size(), ChunkForm{});
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    const ScheduledChunk& chunk = plan.chunks[i];
    // A draft's rows are verified each from its reduction as well; a proposer's extra rows
    // (lookahead's window) are read whole.
    if (!chunk.samples || chunk.n_extra != 0) continue;
    const auto it = live.find(chunk.seq->id);
    if (it == live.end()) continue;
    const Completion& c = *it->second;
    // The forks a first row makes sample it with samplers like this one (same setup, nothing
    // accepted yet), so this one's need is theirs.
    if (c.group->mode != GroupMode::Sample || c.mask_job) continue;
    switch (c.sampler.row_need()) {
      case sampling::RowNeed::Whole: break;
      case sampling::RowNeed::Argmax: forms[i].form = backend::RowForm::Argmax; break;
      case sampling::RowNeed::Leading:
        forms[i].form = backend::RowForm::Leading;
        forms[i].leading_scale = c.sampler.leading_total_scale();
        break;
    }
  }
}

namespace {

// A backend's reduction of a row as the sampler reads it.
sampling::LeadingCandidates leading_view(const backend::RowLeading& reduced, int64_t vocab) {
  const auto count = static_cast<size_t>(std::max(reduced.count, 0));
  return {std::span(reduced.ids, count), std::span(reduced.logits, count), reduced.total, static_cast<size_t>(vocab)};
}

}  // namespace

void OutputProcessor::bring_back_unsettled_rows(const StepPlan& plan, ModelRunner& runner) {
  const std::vector<ChunkLogits>& rows = runner.chunk_logits();
  unsettled_rows.clear();
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    if (rows[i].form != backend::RowForm::Leading) continue;
    const auto it = live.find(plan.chunks[i].seq->id);
    if (it == live.end()) continue;
    // A draft's later rows, and a request's forked choices, sample with this same setup. A
    // plain draw settles by the generator's next uniform: a draft's row j is its draw j (a tree's
    // rows, and a fork's own generator, may not be: such a row is brought back when drawn).
    const sampling::Sampler& sampler = it->second->sampler;
    for (int64_t j = 0; j < rows[i].n_sample_rows(); ++j) {
      const auto row = static_cast<size_t>(rows[i].sample_row() + j);
      const backend::RowLeading& reduced = runner.row_leading()[row];
      try {
        if (reduced.count >= 0 &&
            !sampler.leading_settles(leading_view(reduced, vocab_size), workspace, static_cast<size_t>(j))) {
          unsettled_rows.push_back(static_cast<int32_t>(row));
        }
      } catch (const std::exception&) {
        // A row the sampler refuses (+inf): its draw below fails its request alone.
      }
    }
  }
  try {
    runner.bring_back(unsettled_rows);
  } catch (const std::exception&) {
    // Each row's own draw brings it back again, and fails only its request if that fails too.
  }
}

sampling::SampleResult OutputProcessor::sample_reduced(Completion& choice, ModelRunner& runner, backend::RowForm form,
                                                       size_t row) {
  if (form == backend::RowForm::Argmax) {
    const backend::RowArgmax& reduced = runner.row_argmax()[row];
    return choice.sampler.sample_argmax(reduced.token, reduced.value);
  }
  const backend::RowLeading& reduced = runner.row_leading()[row];
  if (reduced.count < 0) return choice.sampler.sample(runner.whole_row(row), workspace);  // left whole
  const sampling::LeadingCandidates leading = leading_view(reduced, vocab_size);
  if (std::optional<sampling::SampleResult> result = choice.sampler.sample_leading(leading, workspace)) return *result;
  // The nucleus (or the min-p set) reaches past the leading candidates: the whole row after all.
  return choice.sampler.sample(runner.whole_row(row), workspace);
}

void OutputProcessor::on_reduced(Completion& c, ModelRunner& runner, backend::RowForm form, size_t row) {
  const auto draw_and_emit = [&](Completion& choice) {
    if (std::optional<FinishReason> finish = emit(choice, sample_reduced(choice, runner, form, row))) {
      finish_completion(choice, *finish);
    }
  };
  for (Completion* sibling : fork_choices(c)) draw_and_emit(*sibling);
  draw_and_emit(c);
}

void OutputProcessor::beam_logits(Completion& c, std::span<const float> row) {
  RequestGroup& g = *c.group;
  const auto at = std::find(g.beams.begin(), g.beams.end(), &c);
  if (at == g.beams.end()) return;
  const auto i = static_cast<size_t>(at - g.beams.begin());
  // A beam preempted while it waited computes its logits again: the same, already kept.
  if (g.beam_has_logits[i]) return;
  // Logits of a prefix the beam has since outgrown: a preempted beam recomputed in the step
  // whose round extended it. It computes its new token and comes back.
  if (c.seq.n_computed != static_cast<int64_t>(c.seq.tokens.size())) return;
  g.beam_logits[i].assign(row.begin(), row.end());
  g.beam_has_logits[i] = true;
  if (std::all_of(g.beam_has_logits.begin(), g.beam_has_logits.end(), [](bool b) { return b; })) {
    beam_round(g);
  }
}

void OutputProcessor::beam_round(RequestGroup& g) {
  std::vector<std::span<const float>> rows(g.beam_logits.begin(), g.beam_logits.end());
  const std::vector<sampling::BeamSearch::Extension> extensions = g.beam->step(rows);
  const std::vector<Completion*> old = g.beams;
  std::vector<Completion*> next(extensions.size(), nullptr);
  std::vector<int> children(old.size(), 0);
  // Forks first, so that they copy their parent before it is extended.
  for (size_t j = 0; j < extensions.size(); ++j) {
    const size_t p = extensions[j].parent;
    if (children[p]++ == 0) continue;
    next[j] = &fork(*old[p], 0);
    next[j]->seq.tokens.push_back(extensions[j].token);
  }
  for (size_t j = 0; j < extensions.size(); ++j) {
    if (next[j] != nullptr) continue;
    next[j] = old[extensions[j].parent];
    next[j]->seq.tokens.push_back(extensions[j].token);
  }
  n_generated += extensions.size();
  for (size_t p = 0; p < old.size(); ++p) {
    if (children[p] == 0) retire(*old[p], FinishReason::Stop);  // pruned: its blocks go back
  }
  // And the rest of it too: a search forks up to width beams every round, so keeping the pruned
  // ones would grow with the output's length (what is delivered comes from the search's own
  // hypotheses, not from these).
  std::erase_if(g.completions, [](const std::unique_ptr<Completion>& c) { return c->finish.has_value(); });
  g.beams = std::move(next);
  g.beam_logits.assign(g.beams.size(), {});
  g.beam_has_logits.assign(g.beams.size(), false);
  // The group keeps its width of seats: the first beam holds the unused ones.
  for (Completion* beam : g.beams) beam->seq.seats = 1;
  if (!g.beams.empty()) g.beams.front()->seq.seats = g.width - static_cast<int64_t>(g.beams.size()) + 1;
  if (g.beam->done()) deliver_beams(g);
}

void OutputProcessor::deliver_beams(RequestGroup& g) {
  const std::vector<sampling::BeamHypothesis> best = g.beam->results();
  for (size_t j = 0; j < best.size(); ++j) {
    for (GeneratedToken& t : hypothesis_tokens(best[j], tokenizer, g.params.logprobs.has_value(),
                                                             g.params.skip_special_tokens)) {
      g.streams[j]->push(std::move(t));
    }
    g.streams[j]->finish(best[j].finish);
  }
  g.beams.clear();
  end_group(g, FinishReason::Length);  // streams without a hypothesis (none finished)
}

void OutputProcessor::out_of_blocks(uint64_t sequence_id) {
  const auto it = live.find(sequence_id);
  if (it == live.end()) return;
  Completion& c = *it->second;
  RequestGroup& g = *c.group;
  if (g.mode != GroupMode::Beam) {
    finish_completion(c, FinishReason::Length);
    return;
  }
  // The cache cannot hold the beams any longer: they end at their length.
  g.beam->stop();
  deliver_beams(g);
}

void OutputProcessor::record_prompt_logprobs(Completion& c, const ChunkLogits& rows,
                                          std::span<const float> logits) {
  RequestGroup& g = *c.group;
  const auto vocab = static_cast<size_t>(vocab_size);
  const int32_t top_n = *g.params.prompt_logprobs;
  if (g.prompt_logprobs.empty()) {
    g.prompt_logprobs.push_back({c.seq.tokens[0], std::numeric_limits<float>::quiet_NaN(), {}});
  }
  for (int64_t r = 0; r < rows.n_prompt_rows; ++r) {
    const int64_t position = rows.first_prompt_position + r;
    const int32_t token = c.seq.tokens[static_cast<size_t>(position + 1)];
    const std::span<const float> row = logits.subspan(static_cast<size_t>(rows.first_row + r) * vocab, vocab);
    PromptLogprob entry;
    entry.token = token;
    entry.logprob = sampling::token_logprobs(row, token, top_n, logprob_top, logprob_scratch);
    for (const sampling::TokenLogprob& alt : logprob_top) entry.top.push_back({alt.token, alt.logprob});
    g.prompt_logprobs.push_back(std::move(entry));
  }
  c.seq.next_prompt_logit = rows.first_prompt_position + rows.n_prompt_rows;
  if (!c.seq.wants_prompt_logits()) {
    for (auto& stream : g.streams) stream->set_prompt_logprobs(g.prompt_logprobs);
  }
}

void OutputProcessor::mark_scheduled(const StepPlan& plan) {
  const auto now = std::chrono::steady_clock::now();
  for (const ScheduledChunk& chunk : plan.chunks) {
    RequestGroup& g = *live.at(chunk.seq->id)->group;
    if (g.scheduled) continue;
    g.scheduled = true;
    const double queued = std::chrono::duration<double>(now - g.submitted).count();
    for (auto& stream : g.streams) stream->mark_scheduled(queued);
  }
}

void OutputProcessor::fail_request(uint64_t sequence_id, const std::string& error) {
  const auto it = live.find(sequence_id);
  if (it == live.end()) return;
  RequestGroup& g = *it->second->group;
  if (!g.ended) end_group(g, FinishReason::Error, error);
}

void OutputProcessor::fail_batch(const StepPlan& plan, const std::string& error) {
  for (const ScheduledChunk& chunk : plan.chunks) fail_request(chunk.seq->id, error);
  // A sequence swapped out by this plan may not have had its blocks copied out.
  for (const Sequence* seq : plan.preempted) {
    if (!seq->swap_slots.empty()) fail_request(seq->id, error);
  }
}

void OutputProcessor::process(const StepPlan& plan, ModelRunner& runner, std::span<const float> logits) {
  const auto vocab = static_cast<size_t>(vocab_size);
  const std::vector<ChunkLogits>& rows = runner.chunk_logits();
  bring_back_unsettled_rows(plan, runner);
  // By id: a completion may end (and a beam be pruned) while earlier chunks are processed.
  chunk_ids.clear();
  for (const ScheduledChunk& chunk : plan.chunks) chunk_ids.push_back(chunk.seq->id);
  for (size_t i = 0; i < chunk_ids.size(); ++i) {
    const auto it = live.find(chunk_ids[i]);
    if (it == live.end()) continue;
    Completion& c = *it->second;
    try {
      if (rows[i].n_prompt_rows > 0) record_prompt_logprobs(c, rows[i], logits);
      if (rows[i].samples) {
        const auto row = static_cast<size_t>(rows[i].sample_row());
        if (rows[i].n_extra_logits > 0) {
          // The proposer's own rows (lookahead's window), whatever becomes of the draft.
          const auto first_extra = row + 1 + static_cast<size_t>(rows[i].n_draft);
          speculation.observe(c.seq, logits.subspan(first_extra * vocab, static_cast<size_t>(rows[i].n_extra_logits) * vocab),
                              vocab);
        }
        const std::span<const float> first_row = logits.subspan(row * vocab, vocab);
        // Rows that came back reduced may have no logits (and have no mask: choose_row_forms).
        const backend::RowForm form = rows[i].form;
        const bool reduced = form != backend::RowForm::Whole;
        if (!reduced && !mask_ready_for(c, first_row, rows[i].n_draft == 0)) continue;  // sampled once it is
        const auto n_draft = static_cast<size_t>(rows[i].n_draft);
        RowSampler sample_row;
        if (n_draft > 0 && reduced) {
          sample_row = [this, &c, &runner, form, row](size_t j) { return sample_reduced(c, runner, form, row + j); };
        } else if (n_draft > 0) {
          sample_row = [this, &c, drafted = logits.subspan(row * vocab, (1 + n_draft) * vocab), vocab](size_t j) {
            return c.sampler.sample(drafted.subspan(j * vocab, vocab), workspace);
          };
        }
        if (n_draft > 0 && !c.seq.draft_parents.empty()) {
          verify_tree(c, std::span<const int32_t>(c.seq.draft).first(n_draft),
                      std::span<const int32_t>(c.seq.draft_parents).first(n_draft), sample_row, plan.chunks[i].n_extra);
        } else if (n_draft > 0) {
          verify_draft(c, std::span<const int32_t>(c.seq.draft).first(n_draft), sample_row, plan.chunks[i].n_extra);
        } else {
          // The proposer's own rows with no draft (lookahead found no n-gram): a cost for nothing.
          if (plan.chunks[i].n_extra > 0) speculation.record_rows_only(c.seq, plan.chunks[i].n_extra);
          if (reduced) {
            on_reduced(c, runner, form, row);
          } else {
            on_logits(c, first_row);
          }
        }
      }
    } catch (const std::exception& e) {
      // Its K/V was computed and checked: the blocks already published stay valid.
      fail_request(chunk_ids[i], std::string("processing the request's logits failed: ") + e.what());
    }
  }
}

}  // namespace lumen::engine
