// What a reader would notice on one page of the rendered book, measured in the page itself.
// Evaluated as one expression by `screenshots.py --check` and by `tangle/tests/reader.rs`
// (through the DevTools protocol); it returns a plain object (JSON), and changes nothing.
//
//   problems   what the reader test fails on: an equation box that scrolls or clips, a page
//              that scrolls sideways, an anchor of this page that names no element
//   links      every link to another page of the book (`page.html#id`), checked by the caller
//   ids        every element id of the page, for the caller's cross-page link check
//   measures   numbers for the report: code share of the page, open long library cells, code
//              blocks that scroll sideways, the smallest figure label on screen
(() => {
    const problems = [];
    // Shown: laid out, and not inside a closed <details> (whose content Chromium keeps laid out).
    const shown = (e) =>
        e.checkVisibility({ visibilityProperty: true, contentVisibilityAuto: true }) &&
        !(e.closest("details:not([open])") && !e.closest("summary"));
    const describe = (e) => {
        const id = e.id || (e.closest("[id]") || {}).id || "";
        return `${e.tagName.toLowerCase()}${e.className ? "." + String(e.className).split(" ")[0] : ""}${id ? " near #" + id : ""}`;
    };
    const root = document.documentElement;

    // A page that scrolls sideways, or would if mdBook's `body { overflow-x: hidden }` did not
    // cut it off: an element that reaches past the window with no scrolling box around it.
    const clipsX = (e) => getComputedStyle(e).overflowX !== "visible";
    const outside = [];
    const vw = root.clientWidth;
    const main0 = document.querySelector("main");
    if (main0) {
        const walk = (e) => {
            for (const child of e.children) {
                if (!shown(child)) continue;
                if (child.getBoundingClientRect().right > vw + 1) {
                    outside.push(child);
                    continue;
                }
                if (!clipsX(child)) walk(child);
            }
        };
        walk(main0);
    }
    if (root.scrollWidth > vw + 1 || outside.length) {
        const wide = outside.slice(0, 3).map(describe);
        problems.push(`the page is wider than the window (${Math.max(root.scrollWidth, ...outside.map((e) => Math.round(e.getBoundingClientRect().right)))} px in ${vw} px): ${wide.join(", ")}`);
    }

    // Equation boxes: no scrollbar at desktop width, and never a vertical one (clipped glyphs).
    const wideScreen = root.clientWidth >= 1000;
    for (const body of document.querySelectorAll(".tangle-equation-body")) {
        if (!shown(body)) continue;
        const name = body.parentElement.id || "an unnumbered equation";
        if (body.scrollHeight > body.clientHeight + 1) {
            problems.push(`equation ${name}: content ${body.scrollHeight} px tall in a ${body.clientHeight} px box (clipped or a vertical scrollbar)`);
        }
        if (wideScreen && body.scrollWidth > body.clientWidth + 1) {
            problems.push(`equation ${name}: ${body.scrollWidth} px wide in a ${body.clientWidth} px box (a scrollbar at desktop width)`);
        }
    }

    // On paper nothing scrolls: a box whose content is wider than the box is cut at its edge.
    if (matchMedia("print").matches) {
        for (const e of document.querySelectorAll("main pre, main pre > code, main samp, main .table-wrapper, main table, .tangle-equation-body, main figure")) {
            if (shown(e) && e.scrollWidth > e.clientWidth + 1) {
                problems.push(`printed, ${describe(e)} is cut: ${e.scrollWidth} px of content in ${e.clientWidth} px`);
            }
        }
    }

    // Anchors of this page that name nothing on it.
    const ids = Array.from(document.querySelectorAll("[id]")).map((e) => e.id);
    const idSet = new Set(ids);
    const links = [];
    for (const a of document.querySelectorAll("main a[href]")) {
        const href = a.getAttribute("href");
        if (/^[a-z]+:/i.test(href) || href.startsWith("//")) continue; // outside the book
        const [path, hash] = href.split("#");
        if (path === "" && hash !== undefined) {
            if (hash !== "" && !idSet.has(decodeURIComponent(hash))) problems.push(`a link to #${hash} names no element of this page`);
        } else {
            links.push(href);
        }
    }

    // Measures. Code: Rust blocks a reader sees without opening anything.
    const main = document.querySelector("main");
    const code = Array.from(document.querySelectorAll("main pre > code.language-rust")).map((c) => c.parentElement);
    const visible = code.filter(shown);
    const codeHeight = visible.reduce((sum, pre) => sum + pre.getBoundingClientRect().height, 0);
    const lines = (pre) => pre.textContent.replace(/\n$/, "").split("\n").length;
    const openLongLibrary = visible
        .filter((pre) => (pre.closest(".tangle-cell") || {}).dataset?.kind === "library" || !pre.closest(".tangle-cell"))
        .filter((pre) => lines(pre) > 40 && !(pre.closest(".tangle-cell") || {}).dataset?.open)
        .map((pre) => ({ at: describe(pre), lines: lines(pre) }));
    const scrolls = (e) => e.scrollWidth > e.clientWidth + 1;
    const scrollingCode = visible.filter((pre) => scrolls(pre) || scrolls(pre.querySelector("code"))).length;
    const outputs = Array.from(document.querySelectorAll("main pre.tangle-output")).filter(shown);
    const scrollingOutput = outputs.filter((pre) => pre.scrollWidth > pre.clientWidth + 1).length;
    let smallestLabel = null;
    for (const text of document.querySelectorAll("main figure svg text")) {
        if (!shown(text) || !text.textContent.trim()) continue;
        const ctm = text.getScreenCTM();
        const h = parseFloat(getComputedStyle(text).fontSize) * (ctm ? Math.hypot(ctm.a, ctm.b) : 1);
        if (h > 0 && (smallestLabel === null || h < smallestLabel)) smallestLabel = h;
    }
    const equations = Array.from(document.querySelectorAll(".tangle-equation-body")).filter(shown).length;
    return {
        problems,
        links,
        ids,
        measures: {
            pageHeight: Math.round(main ? main.getBoundingClientRect().height : root.scrollHeight),
            codeHeight: Math.round(codeHeight),
            codeShare: main ? codeHeight / main.getBoundingClientRect().height : 0,
            codeBlocks: code.length,
            visibleCodeBlocks: visible.length,
            scrollingCode,
            outputBlocks: outputs.length,
            scrollingOutput,
            openLongLibrary,
            equations,
            smallestFigureLabelPx: smallestLabel === null ? null : Math.round(smallestLabel * 10) / 10,
        },
    };
})()
