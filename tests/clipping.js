// The clipped-text guard (issue 29): every piece of text on the page that is cut off, as
// {kind, text, need, have}.  Run by tests/test_browser.py on every page after its main action.
() => {
  const found = [];
  const seen = new Set();
  const textOf = el => (el.innerText || el.textContent || "").replace(/\s+/g, " ").trim();
  const shown = el => {
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) return false;
    const style = getComputedStyle(el);
    return style.visibility !== "hidden" && style.display !== "none";
  };
  const add = (kind, el, text, need, have) => {
    const key = kind + "|" + text;
    if (seen.has(key)) return;
    seen.add(key);
    found.push({kind, text: text.slice(0, 100), need: Math.round(need), have: Math.round(have)});
  };
  const overflows = el => el.scrollWidth > el.clientWidth + 1;
  const root = document.querySelector('[data-testid="stMain"]') || document.body;
  const sidebar = document.querySelector('[data-testid="stSidebar"]');
  const scopes = sidebar ? [root, sidebar] : [root];

  // 1. Any element cut with an ellipsis (select values, labels, buttons, captions ...).
  for (const scope of scopes) {
    for (const el of scope.querySelectorAll("*")) {
      if (el.closest(".js-plotly-plot")) continue;
      const style = getComputedStyle(el);
      if (style.textOverflow !== "ellipsis" || !overflows(el) || !shown(el)) continue;
      const text = textOf(el);
      if (text) add("ellipsis", el, text, el.scrollWidth, el.clientWidth);
    }
  }
  // 2. Metric values and labels, tab labels, select values, buttons: overflow of any kind.
  const boxed = {
    metric: '[data-testid="stMetricValue"], [data-testid="stMetricValue"] *, [data-testid="stMetricLabel"] *',
    tab: '[role="tab"], [role="tab"] *',
    select: '[data-baseweb="select"] [value], [data-baseweb="select"] div[title], [data-baseweb="select"] span',
    button: '[data-testid^="stBaseButton"] p, [data-testid="stDownloadButton"] p',
    radio: '[role="radiogroup"] label p',
  };
  for (const [kind, selector] of Object.entries(boxed)) {
    for (const scope of scopes) {
      for (const el of scope.querySelectorAll(selector)) {
        if (!shown(el) || !overflows(el)) continue;
        const text = textOf(el);
        if (text) add(kind, el, text, el.scrollWidth, el.clientWidth);
      }
    }
  }
  // 2b. Text in input boxes (select and combo-box values are <input>s): the value's width against the box.
  const ruler = document.createElement("canvas").getContext("2d");
  const widthOf = (text, style) => {
    ruler.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    return ruler.measureText(text).width;
  };
  for (const scope of scopes) {
    for (const input of scope.querySelectorAll("input")) {
      if (!shown(input) || ["checkbox", "radio", "file", "hidden", "range"].includes(input.type)) continue;
      const style = getComputedStyle(input);
      const room = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
      const need = widthOf(input.value || "", style);
      if (input.value && need > room + 1) add("input", input, input.value, need, room);
    }
  }
  // 2c. Widget labels and headings broken inside a word ("Permutation / s B"): a word wider than its line.
  for (const scope of scopes) {
    for (const el of scope.querySelectorAll('[data-testid="stWidgetLabel"] p, [data-testid="stMetricLabel"] p, ' +
                                            'th, [data-testid="stCaptionContainer"], h1, h2, h3')) {
      if (!shown(el)) continue;
      const style = getComputedStyle(el);
      let box = el;  // an inline element has no width of its own: its line is its nearest block's
      while (box.parentElement && box.clientWidth === 0) box = box.parentElement;
      const boxStyle = getComputedStyle(box);
      const room = box.clientWidth - parseFloat(boxStyle.paddingLeft) - parseFloat(boxStyle.paddingRight);
      // A line may break at a space, a zero-width space or after a hyphen ("text-embedding-3-small" wraps).
      for (const word of textOf(el).split(/[\s\u200b]+|(?<=-)/)) {
        const need = widthOf(word, style);
        if (word.length > 1 && need > room + 1) add("word-broken", el, `${word} (in ${textOf(el)})`, need, room);
      }
    }
  }
  // 3. Static tables: a column pushed out of sight behind a horizontal scroll.
  for (const table of root.querySelectorAll('[data-testid="stTable"], [data-testid="stTableStyledTable"]')) {
    for (const el of [table, ...table.querySelectorAll("div")]) {
      if (shown(el) && overflows(el) && ["auto", "scroll", "hidden"].includes(getComputedStyle(el).overflowX)) {
        const header = [...table.querySelectorAll("th")].map(textOf).join(" | ");
        add("table-scroll", el, header, el.scrollWidth, el.clientWidth);
      }
    }
  }
  // 4. Interactive dataframes (a canvas): each header and cell measured against its column's width,
  //    read from the grid's own props; and columns pushed out of sight to the right.
  const canvas = document.createElement("canvas").getContext("2d");
  for (const frame of root.querySelectorAll('[data-testid="stDataFrame"]')) {
    if (!shown(frame)) continue;
    const fiberKey = Object.keys(frame).find(k => k.startsWith("__reactFiber"));
    if (!fiberKey) continue;
    const stack = [frame[fiberKey].child];
    let props = null;
    for (let steps = 0; stack.length && steps < 20000 && !props; steps++) {
      const fiber = stack.pop();
      if (!fiber) continue;
      const p = fiber.memoizedProps;
      if (p && Array.isArray(p.columns) && typeof p.getCellContent === "function" && p.theme) props = p;
      if (fiber.sibling) stack.push(fiber.sibling);
      if (fiber.child) stack.push(fiber.child);
    }
    if (!props) { add("dataframe-unread", frame, "grid props not found", 0, 0); continue; }
    const pad = 2 * (props.theme.cellHorizontalPadding || 8);
    let total = 0;
    props.columns.forEach((column, c) => {
      total += column.width;
      canvas.font = props.theme.headerFontFull;
      const title = String(column.title || "");
      const need = canvas.measureText(title).width + pad;
      if (title && need > column.width + 1) add("dataframe-header", frame, title, need, column.width);
      canvas.font = props.theme.baseFontFull;
      for (let r = 0; r < Math.min(props.rows, 200); r++) {
        const cell = props.getCellContent([c, r]);
        const text = cell && cell.displayData !== undefined ? String(cell.displayData) : "";
        const cellNeed = canvas.measureText(text).width + pad;
        if (text && cellNeed > column.width + 1) add("dataframe-cell", frame, `${title}: ${text}`, cellNeed,
                                                     column.width);
      }
    });
    const visible = frame.getBoundingClientRect().width;
    if (total > visible + 2) add("dataframe-scroll", frame, props.columns.map(c => c.title).join(" | "), total,
                                 visible);
  }
  // 5. Chart text (titles, annotations, axis titles, legend entries) running past the chart's edge.
  for (const plot of root.querySelectorAll(".js-plotly-plot")) {
    const svg = plot.querySelector(".main-svg");
    if (!svg || !shown(plot)) continue;
    const edge = svg.getBoundingClientRect();
    for (const text of plot.querySelectorAll(".infolayer text, .annotation text, .g-gtitle text, .g-xtitle text, " +
                                             ".g-ytitle text, .legend text")) {
      const box = text.getBoundingClientRect();
      if (box.width === 0) continue;
      if (box.left < edge.left - 1 || box.right > edge.right + 1) {
        add("chart-text", text, textOf(text), box.width, edge.width);
      }
    }
  }
  return found;
}
