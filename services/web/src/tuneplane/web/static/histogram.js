// TensorBoard's histogram "offset" view drawn on a <canvas>: the ridges, value axis and step
// labels offsetview.js lays out, filling the canvas' CSS size, sharp on high-density screens.
import { layout } from "./offsetview.js";

// Draws ``histograms`` ([{step, buckets: [[left, right, count], ...]}], in step order, at
// least one) on ``canvas``.
export function drawOffsetHistograms(canvas, histograms) {
  const cssWidth = canvas.clientWidth, cssHeight = canvas.clientHeight;
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.round(cssWidth * ratio);
  canvas.height = Math.round(cssHeight * ratio);
  const g = canvas.getContext("2d");
  g.scale(ratio, ratio);
  g.clearRect(0, 0, cssWidth, cssHeight);
  const view = layout(histograms, cssWidth, cssHeight);

  g.font = "11px system-ui, sans-serif";
  g.lineJoin = "round";
  for (const ridge of view.ridges) {  // oldest first: the newest is drawn last, in front
    g.beginPath();
    ridge.points.forEach(([x, y], i) => (i === 0 ? g.moveTo(x, y) : g.lineTo(x, y)));
    g.closePath();
    g.fillStyle = ridge.fill;
    g.fill();
    g.strokeStyle = "rgba(255,255,255,0.9)";
    g.lineWidth = 1;
    g.stroke();
  }

  g.fillStyle = "#5b6670";
  g.strokeStyle = "#c4cad1";
  g.beginPath();
  g.moveTo(view.axis.x0, view.axis.y);
  g.lineTo(view.axis.x1, view.axis.y);
  g.stroke();
  g.textAlign = "center";
  g.textBaseline = "top";
  for (const tick of view.ticks) {
    g.fillRect(tick.x - 0.5, view.axis.y, 1, 4);
    g.fillText(tick.label, tick.x, view.axis.labelY);
  }
  g.textAlign = "left";
  g.textBaseline = "middle";
  for (const label of view.steps) g.fillText(label.label, label.x, label.y);
  canvas.dataset.steps = String(view.ridges.length);
  canvas.dataset.drawn = "true";
}
