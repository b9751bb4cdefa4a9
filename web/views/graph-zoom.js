// Zoom and pan of the layer graph's picture (graph.js): the toolbar's − / + /
// Fit, Ctrl+wheel (a trackpad pinch) or a two-finger pinch, dragging when
// zoomed in, and, with the picture focused, + / - / 0 and the arrow keys.
// Zooming narrows the SVG's viewBox; the picture keeps its size on the page.
// From `closeZoom` on, the viewport is marked `close`, which shows the dots'
// names in small print.

const maxZoom = 8;
const closeZoom = 3;
export const zoomStep = 1.5;

/**
 * Zoom and pan of `picture` (width x height user units) inside `viewport`,
 * kept in view.zoom: the viewBox is (x, y, width / k, height / k), 1 <= k <=
 * maxZoom, never past the picture's edges.
 */
export function makeZoom(view, picture, viewport, width, height, level) {
  const z = view.zoom;
  const apply = () => {
    z.k = Math.min(maxZoom, Math.max(1, z.k));
    z.x = Math.min(Math.max(0, z.x), width - width / z.k);
    z.y = Math.min(Math.max(0, z.y), height - height / z.k);
    picture.setAttribute('viewBox', `${z.x} ${z.y} ${width / z.k} ${height / z.k}`);
    level.textContent = `${Math.round(z.k * 100)}%`;
    viewport.classList.toggle('zoomed', z.k > 1);
    viewport.classList.toggle('close', z.k >= closeZoom);
  };
  // Zooms by `factor` keeping the point at (fx, fy) (fractions of the
  // picture's box) where it is.
  const zoomAt = (factor, fx = 0.5, fy = 0.5) => {
    const k = Math.min(maxZoom, Math.max(1, z.k * factor));
    const wx = z.x + (fx * width) / z.k;
    const wy = z.y + (fy * height) / z.k;
    z.k = k;
    z.x = wx - (fx * width) / k;
    z.y = wy - (fy * height) / k;
    apply();
  };
  const fraction = (clientX, clientY) => {
    const box = picture.getBoundingClientRect();
    return [(clientX - box.left) / box.width, (clientY - box.top) / box.height];
  };
  // Pans by (dx, dy) screen pixels.
  const panBy = (dx, dy) => {
    const box = picture.getBoundingClientRect();
    z.x -= (dx / box.width) * (width / z.k);
    z.y -= (dy / box.height) * (height / z.k);
    apply();
  };

  viewport.addEventListener('wheel', (event) => {
    // A plain wheel scrolls the page; Ctrl+wheel (and a trackpad's pinch,
    // which browsers send as one) zooms.
    if (!event.ctrlKey && !event.metaKey) return;
    event.preventDefault();
    zoomAt(Math.exp(-event.deltaY * 0.01), ...fraction(event.clientX, event.clientY));
  }, { passive: false });

  // Dragging pans when zoomed in; two pointers pinch. A drag is no click.
  const pointers = new Map();
  let dragged = false;
  viewport.addEventListener('pointerdown', (event) => {
    pointers.set(event.pointerId, { x: event.clientX, y: event.clientY });
    dragged = false;
  });
  viewport.addEventListener('pointermove', (event) => {
    const last = pointers.get(event.pointerId);
    if (!last) return;
    if (pointers.size === 2) {
      const [a, b] = [...pointers.values()];
      const before = Math.hypot(a.x - b.x, a.y - b.y);
      last.x = event.clientX;
      last.y = event.clientY;
      const after = Math.hypot(a.x - b.x, a.y - b.y);
      if (before > 0 && after > 0) zoomAt(after / before, ...fraction((a.x + b.x) / 2, (a.y + b.y) / 2));
      dragged = true;
      return;
    }
    const dx = event.clientX - last.x;
    const dy = event.clientY - last.y;
    if (z.k <= 1 || (!dragged && Math.hypot(dx, dy) < 4)) return;
    if (!dragged) viewport.setPointerCapture?.(event.pointerId);
    dragged = true;
    last.x = event.clientX;
    last.y = event.clientY;
    panBy(dx, dy);
  });
  const release = (event) => pointers.delete(event.pointerId);
  viewport.addEventListener('pointerup', release);
  viewport.addEventListener('pointercancel', release);
  viewport.addEventListener('click', (event) => {
    if (!dragged) return;
    dragged = false;
    event.stopPropagation();
    event.preventDefault();
  }, true);

  viewport.addEventListener('keydown', (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const pan = 40;
    const keys = {
      '+': () => zoomAt(zoomStep),
      '=': () => zoomAt(zoomStep),
      '-': () => zoomAt(1 / zoomStep),
      0: () => { z.k = 1; apply(); },
      ArrowLeft: () => panBy(pan, 0),
      ArrowRight: () => panBy(-pan, 0),
      ArrowUp: () => panBy(0, pan),
      ArrowDown: () => panBy(0, -pan),
    };
    const run = keys[event.key];
    // Arrows scroll the page unless zoomed in, where they pan.
    if (!run || (event.key.startsWith('Arrow') && z.k <= 1)) return;
    event.preventDefault();
    run();
  });
  apply();
  return {
    by: (factor) => zoomAt(factor),
    reset: () => {
      z.k = 1;
      apply();
    },
  };
}
