// The one DOM helper.

/** A new `tag` element with class `cls`, appended to `parent` and holding `text` (each if given). */
export function make(tag, cls, parent, text) {
  const node = document.createElement(tag);
  if (cls) {
    node.className = cls;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  if (parent) {
    parent.appendChild(node);
  }
  return node;
}
