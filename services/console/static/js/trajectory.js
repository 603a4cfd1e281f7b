// One trajectory: header, reward provenance, steps, conversation (tool calls with parse status and
// per-turn latency) and the token view.
import { get, tokenTexts } from "./api.js";
import { badge, esc, fmt, kv, link, short, when } from "./util.js";
import { MODES, TokenView, legend } from "./tokens.js";

function content(m) {
  if (Array.isArray(m.content)) return m.content.map((p) => p.text || "").join("");
  return m.content ?? "";
}

function callsHtml(step, message) {
  // The step records every attempted call (parse status included); the message keeps the parsed ones.
  const attempted = (step && step.tool_calls) || [];
  if (attempted.length) {
    return attempted.map((c, i) => {
      const status = (step.parse_statuses || [])[i] || c.status || "ok";
      const args = c.arguments !== undefined && c.arguments !== null ? JSON.stringify(c.arguments) : "";
      return `<div class="call">${badge(status)} <b>${esc(c.name || "(no name)")}</b> <code>${esc(args)}</code>
        ${c.error ? `<div class="error">${esc(c.error)}</div>` : ""}${status !== "ok" && c.raw ? `<pre class="muted">${esc(c.raw)}</pre>` : ""}</div>`;
    }).join("");
  }
  return (message.tool_calls || []).map((c) => `<div class="call">${badge("ok")} <b>${esc(c.function.name)}</b>
    <code>${esc(c.function.arguments)}</code></div>`).join("");
}

const LONG_TEXT = 20000;

// Very long message text is drawn in part first (the rest on request), so the page paints fast.
function textBlock(text) {
  if (text.length <= LONG_TEXT) return `<pre>${esc(text)}</pre>`;
  return `<pre class="long-text" data-rest="1">${esc(text.slice(0, LONG_TEXT))}</pre>
    <button type="button" class="show-all">show all ${text.length.toLocaleString("en-US")} characters</button>`;
}

function conversation(t) {
  let turn = 0;
  return t.messages.map((m) => {
    const step = m.role === "assistant" ? t.steps[turn] : null;
    if (m.role === "assistant") turn += 1;
    const head = [`<b>${esc(m.role)}</b>`];
    if (m.name) head.push(esc(m.name));
    if (m.tool_call_id) head.push(`for <code>${esc(m.tool_call_id)}</code>`);
    if (step) {
      head.push(`turn ${step.turn}`);
      if (step.latency_s !== null && step.latency_s !== undefined) head.push(`latency ${fmt(step.latency_s, 3)} s`);
      if (step.completion_tokens !== null && step.completion_tokens !== undefined) head.push(`${step.completion_tokens} tokens`);
      if (step.finish_reason) head.push(`finish ${esc(step.finish_reason)}`);
      if (step.error) head.push(`<span class="error">${esc(step.error)}</span>`);
    }
    const text = content(m);
    const reasoning = m.reasoning_content ? `<details><summary>reasoning</summary><pre>${esc(m.reasoning_content)}</pre></details>` : "";
    const calls = m.role === "assistant" ? callsHtml(step, m) : "";
    return `<div class="msg ${esc(m.role)}"><div class="head">${head.join("<span>·</span>")}</div>${reasoning}
      ${text ? textBlock(text) : ""}${calls}</div>`;
  }).join("");
}

function provenance(t) {
  if (!t.rewards.length) return '<p class="muted">no stored reward</p>';
  return `<table id="rewards"><thead><tr><th>component</th><th>version</th><th class="num">weight</th><th class="num">score</th>
    <th>status</th><th>params</th><th>spec</th><th>metrics</th><th>scored</th></tr></thead><tbody>${t.rewards.map((r) => `<tr>
    <td>${esc(r.component)}</td><td>${esc(r.version)}</td><td class="num">${fmt(r.weight)}</td><td class="num">${fmt(r.score)}</td>
    <td>${badge(r.status)}${r.error ? `<div class="error">${esc(r.error)}</div>` : ""}</td><td class="mono">${esc(JSON.stringify(r.params))}</td>
    <td class="mono" title="${esc(r.spec_hash || "")}">${esc((r.spec_hash || "").slice(0, 12))}</td>
    <td class="mono">${esc(JSON.stringify(r.metrics))}</td><td>${when(r.created_at)}</td></tr>`).join("")}</tbody></table>`;
}

function steps(t) {
  if (!t.steps.length) return '<p class="muted">no step records</p>';
  return `<table id="steps"><thead><tr><th class="num">turn</th><th class="num">latency s</th><th class="num">prompt tok</th>
    <th class="num">completion tok</th><th>finish</th><th>tool calls (parse status)</th><th>observations</th></tr></thead><tbody>
    ${t.steps.map((s) => `<tr><td class="num">${s.turn}</td><td class="num">${fmt(s.latency_s, 3)}</td><td class="num">${fmt(s.prompt_tokens)}</td>
    <td class="num">${fmt(s.completion_tokens)}</td><td>${esc(s.finish_reason || "")}</td>
    <td>${(s.tool_calls || []).map((c, i) => `${esc(c.name || "?")} ${badge((s.parse_statuses || [])[i] || c.status)}`).join("<br>")}</td>
    <td class="mono">${(s.observations || []).map((o) => esc(String(o).slice(0, 200))).join("<br>")}</td></tr>`).join("")}</tbody></table>`;
}

// The token view of `tokens` mounted in `host`; token text comes from the inference tokenizer.
export function mountTokens(host, tokens, { advantage = null, signal, textNote = "", texts = true } = {}) {
  const modes = Object.entries(MODES).filter(([k]) => k !== "teacher" || tokens.teacher_logprobs);
  const P = (tokens.prompt_ids || []).length, R = (tokens.response_ids || []).length;
  const sampled = (tokens.loss_mask || []).filter((m) => m).length;
  host.innerHTML = `<div class="tokens-bar"><label>colour by <select class="tok-mode">${modes.map(([k, l]) => `<option value="${k}">${esc(l)}</option>`).join("")}</select></label>
    <span class="tok-legend">${legend("mask")}</span>
    <span class="muted">${fmt(P)} prompt + ${fmt(R)} response tokens, ${fmt(sampled)} sampled</span>
    <span class="muted tok-text-note">${esc(textNote)}</span></div>
    <div class="tokview" tabindex="0" aria-label="tokens"></div><pre class="tok-info muted">Hover a token, or focus the view and use ←/→.</pre>`;
  const view = new TokenView(host.querySelector(".tokview"), tokens, { advantage });
  view.onCursor = (_, text) => { host.querySelector(".tok-info").textContent = text; };
  view.mount();
  host.querySelector(".tok-mode").onchange = (ev) => {
    view.setMode(ev.target.value);
    host.querySelector(".tok-legend").innerHTML = legend(ev.target.value);
  };
  const note = host.querySelector(".tok-text-note");
  if (!texts) { note.textContent = textNote || "token ids only"; return view; }
  tokenTexts(view.ids, { signal }).then((texts) => {
    view.setTexts(texts);
    host.dataset.texts = "ready";
    note.textContent = textNote ? textNote : "token text from the inference tokenizer";
  }).catch((err) => {
    if (err.name === "AbortError") return;
    host.dataset.texts = "failed";
    note.textContent = "token ids only (no tokenizer: " + err.message + ")";
  });
  return view;
}

export async function trajectoryPage({ view, params: [id], signal }) {
  const started = performance.now();
  const t = await get(`/v1/trajectories/${id}`, {}, { signal });
  const fetched = performance.now();
  const backend = (t.policy.backend && t.policy.backend.name) || "local";
  view.innerHTML = `<h1>Trajectory <span class="mono">${esc(t.id)}</span></h1>
    ${kv([["job", t.job_id ? link(`/ui/rollouts/${t.job_id}`, short(t.job_id)) : "–"],
      ["group", t.group_id && t.job_id ? link(`/ui/rollouts/${t.job_id}/groups/${t.group_id}`, short(t.group_id)) : "–"],
      ["task", esc(t.task_id || "–")], ["member", `#${t.sample_index}` + (t.attempt ? ` attempt ${t.attempt}` : "")],
      ["status", badge(t.status)], ["stop reason", badge(t.stop_reason) + (t.truncated ? " " + badge("truncated", "length") : "")],
      ["turns", t.turns], ["reward", `<b id="traj-reward">${fmt(t.reward)}</b>`], ["advantage", fmt(t.advantage)],
      ["policy", esc(backend) + (t.policy.mode ? " · " + esc(t.policy.mode) : "")],
      ["session", t.session_id ? link(`/ui/sessions/${encodeURIComponent(t.session_id)}`, t.session_id) : "–"],
      ["created", when(t.created_at)]])}
    ${t.metadata.error ? `<p class="error">${esc(t.metadata.error_code || "")} ${esc(t.metadata.error)}</p>` : ""}
    <h2>Reward provenance</h2>${provenance(t)}
    <h2>Steps</h2>${steps(t)}
    <div class="split"><div><h2>Conversation</h2><div id="conversation">${conversation(t)}</div></div>
    <div><h2 id="tokens">Tokens</h2><div id="token-host">${t.tokens ? "" : '<p class="muted">This trajectory stored no token data (message mode).</p>'}</div></div></div>
    <details><summary>metadata</summary><pre>${esc(JSON.stringify(t.metadata, null, 2))}</pre></details>`;
  const texts = t.messages.map(content);
  view.querySelectorAll("#conversation .msg").forEach((el, i) => {
    const more = el.querySelector("button.show-all");
    if (more) more.onclick = () => { el.querySelector("pre.long-text").textContent = texts[i]; more.remove(); };
  });
  if (t.tokens) {
    const note = backend === "local" ? "" : `token text from the local tokenizer; the policy was ${backend}`;
    mountTokens(view.querySelector("#token-host"), t.tokens, { advantage: t.advantage, signal, textNote: note });
  }
  // Measured by the browser tests: fetch, then draw (conversation and first token chunks), taken after the
  // next frame is painted; performance.now() counts from the navigation's start.
  requestAnimationFrame(() => setTimeout(() => {
    const done = performance.now();
    document.body.dataset.trajFetchMs = (fetched - started).toFixed(1);
    document.body.dataset.trajRenderMs = (done - fetched).toFixed(1);
    document.body.dataset.trajTotalMs = (done - started).toFixed(1);
    document.body.dataset.trajSinceNavigationMs = done.toFixed(1);
    document.body.dataset.trajReady = t.id;
  }, 0));
}
