// ssdx run pages and dashboards (ssdx.report.html): figures, sortable tables, the run views' pickers,
// the parallel coordinates and the ready flag.  Reads window.SSDX (the page's data) and Plotly.
(function(){
const S = window.SSDX, pending = [];
function fmt(v){ if(v===null||v===undefined) return ""; if(typeof v!=="number") return String(v);
  if(Number.isInteger(v)) return String(v); const a=Math.abs(v);
  return (a!==0&&(a<1e-3||a>=1e6))? v.toExponential(3) : String(+v.toPrecision(4)); }
function el(tag, attrs, text){ const e=document.createElement(tag); for(const k in (attrs||{})) e.setAttribute(k, attrs[k]);
  if(text!==undefined) e.textContent=text; return e; }
function draw(div, data, layout){ pending.push(Plotly.newPlot(div, data,
  Object.assign({margin:{l:60,r:20,t:30,b:50}, hovermode:"closest"}, layout||{}), {responsive:true,
  displaylogo:false})); }
function order(a, b){ // a total order for a table's cells: numbers by value, then text, empty last
  const key=v=>(v!==null&&typeof v==="object")? v.text : v;
  const x=key(a), y=key(b), rank=v=>v===null||v===undefined? 2 : typeof v==="number"? 0 : 1;
  if(rank(x)!==rank(y)) return rank(x)-rank(y);
  if(rank(x)===2) return 0;
  if(rank(x)===0) return x-y;
  return String(x).localeCompare(String(y), undefined, {numeric:true}); }
function table(div, spec){
  const t=el("table"), head=el("tr"); const rows=spec.rows.slice();
  spec.columns.forEach((c,i)=>{ const th=el("th", {}, c); const isText=rows.some(r=>typeof r[i]==="string");
    if(isText) th.className="text"; th.addEventListener("click", ()=>{ const asc=!th.classList.contains("sorted-asc");
      head.querySelectorAll("th").forEach(h=>h.classList.remove("sorted-asc","sorted-desc"));
      th.classList.add(asc?"sorted-asc":"sorted-desc");
      rows.sort((a,b)=>order(a[i], b[i])*(asc?1:-1)); body(); });
    head.appendChild(th); });
  const thead=el("thead"); thead.appendChild(head); t.appendChild(thead); const tb=el("tbody"); t.appendChild(tb);
  function cell(v){ if(v!==null&&typeof v==="object"&&v.href!==undefined){ const td=el("td", {class:"text"});
      td.appendChild(el("a", {href:v.href}, v.text)); return td; }
    return el("td", typeof v==="string"?{class:"text"}:{}, fmt(v)); }
  function body(){ tb.textContent=""; rows.forEach(r=>{ const tr=el("tr"); r.forEach(v=>tr.appendChild(cell(v)));
    tb.appendChild(tr); }); }
  body(); const wrap=el("div", {class:"scroll"}); wrap.appendChild(t); div.appendChild(wrap); }
function front(xs, ys, xmax, ymax){ // indices of the 2-D Pareto front (no point at least as good on both, better on one)
  const idx=[]; for(let i=0;i<xs.length;i++) if(xs[i]!==null&&ys[i]!==null) idx.push(i);
  const sx=xmax?-1:1, sy=ymax?-1:1; idx.sort((a,b)=> (sx*xs[a]-sx*xs[b]) || (sy*ys[a]-sy*ys[b]));
  // designs equal on both metrics do not dominate each other: all of them stay on the front
  const out=[]; let best=Infinity, lx=null, ly=null;
  for(const i of idx){ const x=sx*xs[i], y=sy*ys[i];
    if(y<best){ out.push(i); best=y; lx=x; ly=y; } else if(x===lx&&y===ly) out.push(i); }
  return out; }
function selector(label, options, value, onchange){
  const l=el("label", {}, label), s=el("select"); options.forEach(o=>{ const op=el("option", {value:o}, o);
    if(o===value) op.selected=true; s.appendChild(op); }); s.addEventListener("change", ()=>onchange(s.value));
  l.appendChild(s); return l; }
function hoverText(i){ const R=S.rows; return R.params.map(p=>p+" = "+fmt(R.columns[p][i])).join("<br>"); }
function showRow(box, i){ const R=S.rows; box.textContent="";
  const cfg=el("dl", {class:"facts"}); R.params.concat(R.metrics).forEach(k=>{ cfg.appendChild(el("dt", {}, k));
    cfg.appendChild(el("dd", {}, fmt(R.columns[k][i]))); });
  box.appendChild(el("p", {}, "Configuration " + R.columns.config_index[i] + " — rerun this design alone:"));
  const pre=el("pre", {class:"cmd"}, R.command.split("{INDEX}").join(R.columns.config_index[i]));
  pre.setAttribute("data-config-index", R.columns.config_index[i]); box.appendChild(pre); box.appendChild(cfg); }
function scatter(div, spec){
  const R=S.rows, ctl=el("div", {class:"controls"}), plot=el("div", {class:"plot"}), box=el("div", {class:"picked"});
  div.appendChild(ctl); div.appendChild(plot); div.appendChild(box); const st=Object.assign({}, spec);
  const varies=k=>new Set(R.columns[k]).size>1;
  const axes=R.metrics.filter(varies).concat(R.params.filter(p=>R.numeric[p]));
  function render(){ const xs=R.columns[st.x], ys=R.columns[st.y], f=front(xs, ys, st.x_better==="max", st.y_better==="max");
    const text=xs.map((_, i)=>hoverText(i)); const fx=f.map(i=>xs[i]), fy=f.map(i=>ys[i]);
    const data=[{type:"scattergl", mode:"markers", name:"designs", x:xs, y:ys, text:text, customdata:xs.map((_, i)=>i),
      hovertemplate:"%{text}<br>"+st.x+" = %{x}<br>"+st.y+" = %{y}<extra></extra>", marker:{size:6, opacity:.6,
      color:"#457b9d"}},
      {type:"scatter", mode:"lines+markers", name:"Pareto front ("+f.length+(R.n_rows<R.n_total? " of the designs shown)" : ")"),
       x:fx, y:fy, customdata:f,
       text:f.map(i=>text[i]), hovertemplate:"%{text}<br>"+st.x+" = %{x}<br>"+st.y+" = %{y}<extra>front</extra>",
       line:{shape:"hv", color:"#e63946"}, marker:{size:9, color:"#e63946"}}];
    plot.setAttribute("data-front-size", f.length);
    const p=Plotly.react(plot, data, {margin:{l:70,r:20,t:30,b:50}, hovermode:"closest",
      xaxis:{title:{text:st.x+" ("+st.x_better+" is better)"}}, yaxis:{title:{text:st.y+" ("+st.y_better+" is better)"}}},
      {responsive:true, displaylogo:false}); pending.push(p); return p; }
  ctl.appendChild(selector("x", axes, st.x, v=>{ st.x=v; render(); }));
  ctl.appendChild(selector("x better", ["min","max"], st.x_better, v=>{ st.x_better=v; render(); }));
  ctl.appendChild(selector("y", axes, st.y, v=>{ st.y=v; render(); }));
  ctl.appendChild(selector("y better", ["min","max"], st.y_better, v=>{ st.y_better=v; render(); }));
  render().then(()=>plot.on("plotly_click", ev=>{ if(ev.points.length) showRow(box, ev.points[0].customdata); })); }
const VIRIDIS=[[68,1,84],[59,82,139],[33,145,140],[94,201,98],[253,231,37]];
function viridis(t){ t=Math.min(Math.max(t,0),1)*(VIRIDIS.length-1); const i=Math.min(Math.floor(t), VIRIDIS.length-2), f=t-i;
  const c=VIRIDIS[i].map((a,k)=>Math.round(a+(VIRIDIS[i+1][k]-a)*f)); return "rgba("+c.join(",")+",0.55)"; }
function parcoords(div, spec){
  // parallel coordinates on a 2-D canvas (no WebGL: fast in any browser), axes and brushes in SVG above it
  const R=S.rows, dims=spec.dimensions, n=R.columns.config_index.length, W=Math.max(div.clientWidth||1200, 600),
    H=440, top=70, bottom=36, left=70, right=70, ph=H-top-bottom, NS="http://www.w3.org/2000/svg";
  const wrap=el("div", {style:"position:relative;width:"+W+"px;height:"+H+"px"}), info=el("p", {class:"text pc-count"});
  const canvas=el("canvas", {width:W, height:H, style:"position:absolute;left:0;top:0"});
  const svg=document.createElementNS(NS, "svg"); svg.setAttribute("width", W); svg.setAttribute("height", H);
  svg.setAttribute("style", "position:absolute;left:0;top:0"); wrap.appendChild(canvas); wrap.appendChild(svg);
  div.appendChild(info); div.appendChild(wrap);
  const xs=dims.map((_, j)=>left+j*(W-left-right)/Math.max(dims.length-1, 1));
  const axes=dims.map(d=>{ const v=R.columns[d];
    if(R.numeric[d]){ let lo=Infinity, hi=-Infinity; v.forEach(a=>{ if(a!==null){ lo=Math.min(lo,a); hi=Math.max(hi,a); } });
      const span=hi>lo? hi-lo : 1; return {norm:v.map(a=>a===null? NaN : (a-lo)/span), lo:lo, hi:hi, cats:null}; }
    const cats=[...new Set(v)].sort(); return {norm:v.map(a=>cats.length>1? cats.indexOf(a)/(cats.length-1) : .5), cats:cats}; });
  const cv=R.columns[spec.color]; let clo=Infinity, chi=-Infinity; cv.forEach(a=>{ if(a!==null){ clo=Math.min(clo,a); chi=Math.max(chi,a);} });
  const colour=cv.map(a=>a===null? "rgba(150,150,150,.4)" : viridis(chi>clo? (a-clo)/(chi-clo) : .5));
  const brush=dims.map(()=>null); const y=t=>top+(1-t)*ph;
  function inside(i){ for(let j=0;j<dims.length;j++){ const b=brush[j]; if(!b) continue; const t=axes[j].norm[i];
    if(!(t>=b[0]&&t<=b[1])) return false; } return true; }
  function redraw(){ const g=canvas.getContext("2d"); g.clearRect(0,0,W,H); g.lineWidth=1; let kept=0; const on=[];
    g.strokeStyle="rgba(180,180,180,0.12)";
    for(let i=0;i<n;i++){ if(inside(i)){ on.push(i); continue; } line(g, i); }
    on.forEach(i=>{ g.strokeStyle=colour[i]; line(g, i); kept++; });
    info.textContent=kept+" of "+n+" designs inside the brushed ranges; colour: "+spec.color+" (dark: "+fmt(clo)+
      ", yellow: "+fmt(chi)+")"; div.setAttribute("data-kept", kept);
    const ranges={}; brush.forEach((b, j)=>{ if(b&&!axes[j].cats) ranges[dims[j]]=b.map(t=>axes[j].lo+t*(axes[j].hi-axes[j].lo)); });
    div.setAttribute("data-brush", JSON.stringify(ranges)); }
  function line(g, i){ g.beginPath(); let pen=false; for(let j=0;j<dims.length;j++){ const t=axes[j].norm[i];
      if(Number.isNaN(t)){ pen=false; continue; } if(pen) g.lineTo(xs[j], y(t)); else { g.moveTo(xs[j], y(t)); pen=true; } }
    g.stroke(); }
  function sv(tag, attrs, text){ const e=document.createElementNS(NS, tag); for(const k in attrs) e.setAttribute(k, attrs[k]);
    if(text!==undefined) e.textContent=text; svg.appendChild(e); return e; }
  dims.forEach((d, j)=>{ const a=axes[j], x=xs[j];
    sv("line", {x1:x, x2:x, y1:top, y2:top+ph, stroke:"#333", "stroke-width":1});
    sv("text", {x:x-4, y:top-10, "font-size":10.5, transform:"rotate(-22 "+(x-4)+" "+(top-10)+")"}, d);
    const ticks=a.cats? a.cats.map((c, k)=>[a.cats.length>1? k/(a.cats.length-1) : .5, String(c)]) :
      [[0, fmt(a.lo)], [0.5, fmt((a.lo+a.hi)/2)], [1, fmt(a.hi)]];
    ticks.forEach(([t, label])=>{ sv("text", {x:x+5, y:y(t)+4, "font-size":10, fill:"#4a5563"}, label); });
    const rect=sv("rect", {x:x-7, width:14, y:0, height:0, fill:"rgba(29,53,87,.25)", stroke:"#1d3557", "data-axis":j});
    const hit=sv("rect", {x:x-12, width:24, y:top, height:ph, fill:"transparent", style:"cursor:crosshair",
      "data-brush-axis":d});
    hit.addEventListener("mousedown", ev=>{ ev.preventDefault(); const box=svg.getBoundingClientRect(), y0=ev.clientY-box.top;
      function at(cy){ return Math.min(Math.max(1-(cy-top)/ph, 0), 1); }
      function move(e){ const y1=e.clientY-box.top, a0=at(y0), a1=at(y1);
        rect.setAttribute("y", Math.min(y(a0), y(a1))); rect.setAttribute("height", Math.abs(y(a0)-y(a1))); }
      function up(e){ document.removeEventListener("mousemove", move); document.removeEventListener("mouseup", up);
        const a0=at(y0), a1=at(e.clientY-box.top);
        if(Math.abs(a1-a0)*ph<3){ brush[j]=null; rect.setAttribute("height", 0); } else brush[j]=[Math.min(a0,a1), Math.max(a0,a1)];
        redraw(); }
      document.addEventListener("mousemove", move); document.addEventListener("mouseup", up); }); });
  redraw(); }
function importance(div, spec){
  const ctl=el("div", {class:"controls"}), plot=el("div", {class:"plot"}); div.appendChild(ctl); div.appendChild(plot);
  function render(m){ const sh=spec.shares[m]; const names=Object.keys(sh).sort((a,b)=>sh[a]-sh[b]);
    pending.push(Plotly.react(plot, [{type:"bar", orientation:"h", x:names.map(n=>sh[n]), y:names,
      marker:{color:"#2a9d8f"}}], {margin:{l:220,r:20,t:30,b:50}, xaxis:{title:{text:"share of the variance of "+m+
      " explained by the parameter alone"}, range:[0,1]}}, {responsive:true, displaylogo:false})); }
  const ms=Object.keys(spec.shares); ctl.appendChild(selector("metric", ms, spec.metric, render)); render(spec.metric); }
window.ssdxTimes=[];
document.querySelectorAll("[data-section]").forEach(div=>{
  const sec=S.sections[+div.getAttribute("data-section")], t0=performance.now();
  try {
    if(sec.kind==="table") table(div, sec.spec);
    else if(sec.kind==="plot"){ const v=sec.spec.view;
      if(v==="scatter") scatter(div, sec.spec); else if(v==="parcoords") parcoords(div, sec.spec);
      else if(v==="importance") importance(div, sec.spec);
      else { const p=el("div", {class:"plot"}); div.appendChild(p); draw(p, sec.spec.data, sec.spec.layout); } }
  } catch(e){ console.error("section " + sec.title + ": " + e); throw e; }
  window.ssdxTimes.push({title:sec.title, ms:performance.now()-t0});
});
Promise.all(pending).then(()=>{ window.ssdxReady=true; document.body.setAttribute("data-ready", "1"); });
})();
