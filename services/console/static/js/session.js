// One gateway session: its calls, the merged token segments, and each prefix mismatch with the
// token-id diff where the new prompt stopped extending the previous prompt + completion.
import { get } from "./api.js";
import { badge, esc, fmt, kv } from "./util.js";
import { mountTokens } from "./trajectory.js";

const CAUSES = {
  template_strip: "the chat template re-rendered history without the reasoning the model produced",
  retokenization: "the same text came back as different token ids (history was re-tokenised)",
  other: "the history was edited or re-rendered, or the client changed the reply it sent back",
};

function diffTable(expected, actual, at) {
  const lo = Math.max(0, at - 6), hi = Math.max(at + 7, lo + 1);
  const cells = (seq) => Array.from({ length: hi - lo }, (_, k) => {
    const i = lo + k, v = seq[i];
    const differs = expected[i] !== actual[i];
    return `<td class="${differs ? "x" : ""}${i === at ? " at" : ""}">${v === undefined ? "∅" : v}</td>`;
  }).join("");
  const index = Array.from({ length: hi - lo }, (_, k) => `<td class="muted">${lo + k}</td>`).join("");
  return `<table class="diff"><tbody><tr><th>position</th>${index}</tr><tr><th>expected (prev prompt + completion)</th>${cells(expected)}</tr>
    <tr><th>sent (new prompt)</th>${cells(actual)}</tr></tbody></table>`;
}

export async function sessionPage({ view, params: [sessionId], signal }) {
  const [traces, merged] = await Promise.all([
    get(`/v1/sessions/${encodeURIComponent(sessionId)}/traces`, {}, { signal }),
    get(`/v1/sessions/${encodeURIComponent(sessionId)}/trajectory`, {}, { signal })]);
  const bySeq = new Map(traces.map((t) => [t.sequence, t]));
  // Token text only when the local engine served the session (another model's ids mean other text).
  let localModels = [];
  try { localModels = [(await get("/inference/health", {}, { signal })).model]; } catch (_) { /* no local engine */ }
  view.innerHTML = `<h1>Gateway session <span class="mono">${esc(sessionId)}</span></h1>
    ${kv([["calls", merged.calls], ["captured", merged.captured_calls], ["joins", merged.joins],
      ["prefix mismatches", `<b id="mismatch-count">${merged.mismatches.length}</b>`], ["segments", merged.segments.length]])}
    <h2>Calls</h2><table class="nav" id="calls"><thead><tr><th class="num">seq</th><th class="num">attempt</th><th>model</th><th>endpoint</th>
      <th>status</th><th>finish</th><th class="num">prompt tok</th><th class="num">completion tok</th><th class="num">latency ms</th>
      <th class="num">retries</th><th>parse</th><th>error</th></tr></thead><tbody>${traces.map((t) => `<tr>
      <td class="num">${t.sequence}</td><td class="num">${t.attempt ?? "–"}</td><td>${esc(t.model)}</td><td>${esc(t.endpoint)}</td>
      <td>${badge(t.status)} ${t.http_status}</td><td>${esc(t.finish_reason || "")}</td>
      <td class="num">${fmt((t.prompt_token_ids || []).length)}</td><td class="num">${fmt((t.completion_token_ids || []).length)}</td>
      <td class="num">${fmt(t.latency_ms, 1)}</td><td class="num">${t.retries}</td>
      <td>${(t.parse_statuses || []).map((s) => badge(s)).join(" ")}</td><td class="error">${esc(t.error_code || "")} ${esc(t.error_message || "")}</td></tr>`).join("")
      || '<tr><td colspan="12" class="muted">no calls recorded for this session</td></tr>'}</tbody></table>
    <h2>Prefix mismatches</h2><div id="mismatches">${merged.mismatches.length ? "" : '<p class="muted">none: every call extended the one before</p>'}</div>
    <h2>Merged segments</h2><div id="segments"></div>`;
  view.querySelector("#mismatches").innerHTML += merged.mismatches.map((m) => {
    const prev = bySeq.get(m.previous_sequence), next = bySeq.get(m.sequence);
    const expected = prev ? (prev.prompt_token_ids || []).concat(prev.completion_token_ids || []) : [];
    const actual = next ? next.prompt_token_ids || [] : [];
    return `<div class="card mismatch"><h3>call ${m.sequence} after call ${m.previous_sequence}: ${badge(m.cause, "bad")} at token ${m.position}</h3>
      <p>${esc(CAUSES[m.cause] || m.cause)}. Expected id <b>${expected[m.position] ?? "∅"}</b>, sent <b>${actual[m.position] ?? "∅"}</b>.</p>
      ${diffTable(expected, actual, m.position)}</div>`;
  }).join("");
  const host = view.querySelector("#segments");
  merged.segments.forEach((seg, i) => {
    const box = document.createElement("div");
    box.className = "card segment";
    box.innerHTML = `<h3>segment ${i}: calls ${esc((seg.metadata.sequences || []).join(", "))} · ${seg.turns} turns · stop ${badge(seg.stop_reason)}</h3><div class="seg-tokens"></div>`;
    host.appendChild(box);
    const model = (bySeq.get((seg.metadata.sequences || [])[0]) || {}).model;
    const local = localModels.includes(model);
    if (seg.tokens) mountTokens(box.querySelector(".seg-tokens"), seg.tokens, { signal, texts: local,
      textNote: local ? "" : `token ids only: ${model || "the upstream"} is not the local engine's model` });
  });
}
