// The page helpers every page uses: an element by id, the header's status line, an element
// built from its properties and children (text, never markup), and a table cell.

export const $ = (id) => document.getElementById(id);

// What the page is doing, or what went wrong, in the header's #status.
export const status = (text) => { $("status").textContent = text; };

// A ``tag`` element with ``props`` (``dataset`` merged into its data- attributes) and
// ``children``: strings become text nodes, so nothing is parsed as HTML.
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "dataset") Object.assign(node.dataset, v); else node[k] = v;
  }
  node.append(...children);
  return node;
}

// A cell appended to ``row``: a value, a node, or a muted dash for nothing.
export function cell(row, content, className) {
  const td = document.createElement("td");
  if (className) td.className = className;
  if (content instanceof Node) td.append(content);
  else if (content === null || content === undefined || content === "") {
    td.textContent = "—";
    td.classList.add("muted");
  } else td.textContent = content;
  row.append(td);
  return td;
}
