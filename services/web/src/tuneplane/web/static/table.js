// Table cells the list pages share: a value, a node, or a muted dash for nothing.
"use strict";

function cell(row, content, className) {
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
