// Search across stored trajectories: job, task, stop reason, reward range, tool called and text.
import { get } from "./api.js";
import { badge, clickableRows, esc, fmt, link, short, when } from "./util.js";

const FIELDS = ["job_id", "task_id", "stop_reason", "min_reward", "max_reward", "tool", "q"];
const STOPS = ["", "stop", "length", "max_turns", "max_total_tokens", "tool_error", "api_error", "timeout", "cancelled"];
const PAGE = 25;

export async function searchPage({ view, query, signal, navigate }) {
  const val = (k) => esc(query.get(k) || "");
  view.innerHTML = `<h1>Search trajectories</h1>
    <form class="filters" id="search-form">
      <label>text<input name="q" value="${val("q")}" size="24" placeholder="words in any message"></label>
      <label>tool called<input name="tool" value="${val("tool")}" size="14"></label>
      <label>stop reason<select name="stop_reason">${STOPS.map((s) => `<option value="${s}"${query.get("stop_reason") === s ? " selected" : ""}>${s || "any"}</option>`).join("")}</select></label>
      <label>min reward<input name="min_reward" type="number" step="any" value="${val("min_reward")}" size="6"></label>
      <label>max reward<input name="max_reward" type="number" step="any" value="${val("max_reward")}" size="6"></label>
      <label>task<input name="task_id" value="${val("task_id")}" size="12"></label>
      <label>job id<input name="job_id" value="${val("job_id")}" size="36"></label>
      <button type="submit">Search</button></form>
    <p class="error" id="search-error"></p>
    <table class="nav" id="results"><thead><tr><th>trajectory</th><th>job</th><th>task</th><th class="num">member</th><th>stop</th>
      <th class="num">turns</th><th class="num">reward</th><th>tools</th><th>match</th><th>created</th></tr></thead><tbody></tbody></table>
    <div class="pager" id="results-pager"></div>`;
  clickableRows(view.querySelector("#results"), navigate);
  const form = view.querySelector("#search-form");
  form.onsubmit = (ev) => {
    ev.preventDefault();
    const qs = new URLSearchParams();
    for (const k of FIELDS) { const v = form.elements[k].value.trim(); if (v) qs.set(k, v); }
    navigate("/ui/search?" + qs.toString());
  };
  const filters = Object.fromEntries(FIELDS.map((k) => [k, query.get(k) || undefined]));
  const history = [];
  const load = async (offset) => {
    let page;
    try {
      page = await get("/v1/trajectories", { ...filters, offset, limit: PAGE }, { signal });
    } catch (err) {
      if (err.status === 422 || err.status === 400) { view.querySelector("#search-error").textContent = err.message; return; }
      throw err;
    }
    view.querySelector("#results tbody").innerHTML = page.items.map((t) => `<tr>
      <td>${link(`/ui/trajectories/${t.id}`, short(t.id))}</td><td>${t.job_id ? link(`/ui/rollouts/${t.job_id}`, short(t.job_id)) : "–"}</td>
      <td>${esc(t.task_id || "")}</td><td class="num">${t.sample_index}</td><td>${badge(t.stop_reason)}</td><td class="num">${t.turns}</td>
      <td class="num">${fmt(t.reward)}</td><td>${esc(t.tools_called.join(", "))}</td><td class="mono">${esc(t.snippet)}</td><td>${when(t.created_at)}</td></tr>`).join("")
      || '<tr><td colspan="10" class="muted">no trajectory matches</td></tr>';
    const pagerEl = view.querySelector("#results-pager");
    pagerEl.innerHTML = `<button data-p="prev" ${history.length ? "" : "disabled"}>← prev</button>
      <span class="muted">${page.items.length} shown</span><button data-p="next" ${page.next_offset == null ? "disabled" : ""}>next →</button>`;
    pagerEl.querySelector('[data-p="next"]').onclick = () => { history.push(offset); load(page.next_offset); };
    pagerEl.querySelector('[data-p="prev"]').onclick = () => { if (history.length) load(history.pop()); };
  };
  await load(0);
}
