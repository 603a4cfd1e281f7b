// Small DOM helpers: escaping, formatting, pagination and keyboard navigation of tables.

export function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}

export function fmt(value, digits = 3) {
  if (value === null || value === undefined || Number.isNaN(value)) return "–";
  if (typeof value !== "number") return esc(value);
  if (Object.is(value, -0)) value = 0;
  if (Number.isInteger(value)) return value.toLocaleString("en-US");
  return value.toFixed(digits);
}

export const badge = (text, kind) => `<span class="badge ${esc(kind ?? text)}">${esc(text ?? "–")}</span>`;
export const short = (id) => esc(String(id ?? "").slice(0, 8));
export const link = (href, text) => `<a href="${esc(href)}">${esc(text)}</a>`;
export const when = (iso) => (iso ? esc(new Date(iso).toLocaleString()) : "–");

export function kv(pairs) {
  return `<div class="kv">${pairs.map(([k, v]) => `<div><span>${esc(k)}</span>${v}</div>`).join("")}</div>`;
}

// A pager under a table: prev/next over offset pages; `load(offset)` redraws.
export function pager(el, { offset, limit, nextOffset, count, load }) {
  el.innerHTML = `<button data-p="prev" ${offset <= 0 ? "disabled" : ""}>← prev</button>
    <span class="muted">rows ${count ? offset + 1 : 0}–${offset + count}</span>
    <button data-p="next" ${nextOffset == null ? "disabled" : ""}>next →</button>`;
  el.querySelector('[data-p="prev"]').onclick = () => load(Math.max(0, offset - limit));
  el.querySelector('[data-p="next"]').onclick = () => nextOffset != null && load(nextOffset);
}

// j/k (or arrows) move the selected row of the focused-or-first navigable table; Enter opens it.
export function installTableKeys(navigate) {
  document.addEventListener("keydown", (ev) => {
    if (ev.target.closest && ev.target.closest("input, select, textarea, .tokview")) return;
    const tables = [...document.querySelectorAll("table.nav")];
    if (!tables.length) return;
    const table = tables.find((t) => t.querySelector("tr.sel")) || tables[0];
    const rows = [...table.querySelectorAll("tbody tr")];
    if (!rows.length) return;
    let at = rows.findIndex((r) => r.classList.contains("sel"));
    if (ev.key === "j" || ev.key === "ArrowDown") at = Math.min(rows.length - 1, at + 1);
    else if (ev.key === "k" || ev.key === "ArrowUp") at = Math.max(0, at - 1);
    else if (ev.key === "Enter" && at >= 0) {
      const a = rows[at].querySelector("a[href]");
      if (a) { ev.preventDefault(); navigate(a.getAttribute("href")); }
      return;
    } else return;
    ev.preventDefault();
    rows.forEach((r) => r.classList.remove("sel"));
    rows[at].classList.add("sel");
    rows[at].scrollIntoView({ block: "nearest" });
  });
}

// Rows of a table become clickable: a click anywhere on a row follows its first link.
export function clickableRows(table, navigate) {
  table.addEventListener("click", (ev) => {
    if (ev.target.closest("a, button, input, select, summary")) return;
    const row = ev.target.closest("tbody tr");
    const a = row && row.querySelector("a[href]");
    if (a) navigate(a.getAttribute("href"));
  });
}
