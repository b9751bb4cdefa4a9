// A small element builder, so views read as structure rather than as
// sequences of createElement/append calls. Text is always set as text (never
// as HTML): layer names come from user files.

const svgNs = 'http://www.w3.org/2000/svg';

function build(node, attrs, children) {
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value == null || value === false) continue;
    if (name === 'text') node.textContent = String(value);
    else if (name === 'dataset') Object.assign(node.dataset, value);
    // Through the CSSOM rather than a style attribute, which a strict CSP
    // (style-src without 'unsafe-inline') would refuse.
    else if (name === 'style') for (const [prop, v] of Object.entries(value)) node.style.setProperty(prop, String(v));
    else if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of [children ?? []].flat(Infinity)) {
    if (child == null || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

/** el('td', {class: 'num', text: '42'}) */
export function el(tag, attrs, children) {
  return build(document.createElement(tag), attrs, children);
}

/** svg('circle', {cx: 4, cy: 4, r: 3}) */
export function svg(tag, attrs, children) {
  return build(document.createElementNS(svgNs, tag), attrs, children);
}
