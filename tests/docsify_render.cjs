// Render Docsify routes in jsdom, as a browser would, and print each page's heading ids.
//   node docsify_render.cjs BASE_URL ROUTE...   ->   {"ROUTE": [{"id": …, "text": …}, …]}
// The site at BASE_URL is served over HTTP (Docsify fetches its markdown), with a local
// copy of docsify.min.js; jsdom and Docsify come from NODE_PATH.
const { JSDOM, VirtualConsole } = require("jsdom");

const [base, ...routes] = process.argv.slice(2);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function render(route) {
  const console = new VirtualConsole();
  const errors = [];
  console.on("jsdomError", (e) => errors.push(String(e.message || e)));
  const dom = await JSDOM.fromURL(`${base}#${route}`, {
    runScripts: "dangerously", resources: "usable", pretendToBeVisual: true,
    virtualConsole: console,
    beforeParse(window) { // what a browser has and jsdom lacks; Docsify 5 needs them to start
      window.IntersectionObserver = class { observe() {} unobserve() {} disconnect() {} };
      window.matchMedia = window.matchMedia || (() => ({
        matches: false, addListener() {}, removeListener() {},
        addEventListener() {}, removeEventListener() {} }));
      window.scrollTo = () => {};
    },
  });
  try {
    const deadline = Date.now() + 20000;
    while (Date.now() < deadline) {
      const main = dom.window.document.querySelector("#main");
      if (main && main.querySelector("h1,h2,h3,h4,h5,h6")) {
        await sleep(300); // the page is rendered in one pass; let it finish
        return [...main.querySelectorAll("h1,h2,h3,h4,h5,h6")]
          .map((h) => ({ id: h.id, text: h.textContent }));
      }
      await sleep(50);
    }
    throw new Error(`no heading rendered at ${route}: ${errors.join("; ")}`);
  } finally {
    dom.window.close();
  }
}

(async () => {
  const out = {};
  for (const route of routes) out[route] = await render(route);
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { process.stderr.write(`${e}\n`); process.exit(1); });
