// The page scripts as ES modules: each page loads one module, every import names a file
// and an export that exist, every module is used, and the pure modules touch no DOM.
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const STATIC = join(ROOT, "services/web/src/tuneplane/web/static");
const UPLOT = join(ROOT, "services/web/ui/node_modules/uplot/dist");  // served at /ui/uplot
const PAGES = { "runs.html": "runs.js", "run.html": "run.js", "charts.html": "charts.js", "media.html": "media.js" };
// No DOM, no browser: what tests/web/static tests directly.
const PURE = ["attempts.js", "chartsview.js", "format.js", "lines.js", "offsetview.js", "parallelaxes.js", "paths.js",
  "smoothing.js", "ticks.js"];
const BROWSER = /\b(document|window|location|history|fetch|navigator|localStorage|sessionStorage|IntersectionObserver|ResizeObserver|HTMLElement|Node)\b/;

const read = (name) => readFileSync(join(STATIC, name), "utf8");
const modules = readdirSync(STATIC).filter((f) => f.endsWith(".js")).sort();
const code = (text) => text.replace(/\/\/.*$/gm, "").replace(/`(?:[^`\\]|\\.)*`|"(?:[^"\\]|\\.)*"/g, '""');

// A module's imports: [{ from, names }] (a default import is named "default").
function importsOf(text) {
  return [...text.matchAll(/^import\s+([\s\S]*?)\s+from\s+"([^"]+)";/gm)].map(([, what, from]) => {
    const braces = what.match(/\{([^}]*)\}/);
    const names = braces ? braces[1].split(",").map((n) => n.trim().split(/\s+as\s+/)[0]).filter(Boolean) : [];
    if (/^[\w$]+/.test(what) && !what.startsWith("{")) names.push("default");
    return { from, names };
  });
}

// A module's exports, by name.
function exportsOf(text) {
  const names = [...text.matchAll(/^export\s+(?:async\s+)?(?:function|const|let|class)\s+([\w$]+)/gm)].map((m) => m[1]);
  for (const [, list] of text.matchAll(/^export\s*\{([^}]*)\}/gm)) {
    for (const part of list.split(",")) names.push(part.trim().split(/\s+as\s+/).at(-1));
  }
  return new Set(names.filter(Boolean));
}

describe("pages", () => {
  for (const [page, entry] of Object.entries(PAGES)) {
    test(`${page} loads /static/${entry} as its one module script, nothing inline`, () => {
      const html = read(page);
      const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
      assert.equal(scripts.length, 1, `${page} has ${scripts.length} scripts`);
      const [, attributes, body] = scripts[0];
      assert.equal(attributes.trim(), `type="module" src="/static/${entry}"`);
      assert.equal(body.trim(), "");
      assert.doesNotMatch(html, /\son\w+\s*=/i);  // no inline handlers (the policy refuses them)
      assert.ok(modules.includes(entry));
    });
  }

  test("every .html page of the folder is one of these", () => {
    assert.deepEqual(readdirSync(STATIC).filter((f) => f.endsWith(".html")).sort(), Object.keys(PAGES).sort());
  });
});

describe("imports", () => {
  for (const name of modules) {
    test(`${name}: every import names a module and exports that exist`, (t) => {
      for (const { from, names } of importsOf(read(name))) {
        if (from === "/ui/uplot/uPlot.esm.js") {
          if (!existsSync(UPLOT)) { t.diagnostic("uPlot not installed (npm ci --prefix services/web/ui)"); continue; }
          assert.ok(exportsOf(readFileSync(join(UPLOT, "uPlot.esm.js"), "utf8")).has("default"));
          continue;
        }
        assert.match(from, /^\.\/[\w-]+\.js$/, `${name} imports ${from}: only ./<module>.js or uPlot`);
        const target = from.slice(2);
        assert.ok(modules.includes(target), `${name} imports ${from}, which is not there`);
        const exported = exportsOf(read(target));
        for (const n of names) assert.ok(exported.has(n), `${name} imports ${n} from ${from}, which does not export it`);
      }
    });
  }

  test("every module is loaded by a page (no file left over)", () => {
    const seen = new Set();
    const visit = (name) => {
      if (seen.has(name)) return;
      seen.add(name);
      for (const { from } of importsOf(read(name))) if (from.startsWith("./")) visit(from.slice(2));
    };
    Object.values(PAGES).forEach(visit);
    assert.deepEqual([...seen].sort(), modules);
  });
});

describe("pure modules", () => {
  for (const name of PURE) {
    test(`${name} touches no DOM and imports only pure modules`, () => {
      const text = read(name);
      const found = code(text).match(BROWSER);
      assert.equal(found, null, `${name} uses ${found?.[0]}`);
      for (const { from } of importsOf(text)) assert.ok(PURE.includes(from.slice(2)), `${name} imports ${from}`);
    });
  }

  test("each has its tests beside this file", () => {
    const here = fileURLToPath(new URL(".", import.meta.url));
    for (const name of PURE) assert.ok(existsSync(join(here, name.replace(/\.js$/, ".test.mjs"))), name);
  });
});
