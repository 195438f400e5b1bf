// bench_onnxruntime.js - time one MultiHeadAttention model with onnxruntime-node.
//
//     node tools/bench_onnxruntime.js ORT_NODE MODEL N CAUSAL THREADS CALLS
//
// tools/bench_onnxruntime.py writes the model and runs this; it prints
//     onnxruntime 1.30.0 seq=N causal=C threads=T mha_ms=...
// the best of CALLS runs after one warm-up, on inputs uniform in [-1, 1).
'use strict';
const [ortNode, model, n, causal, threads, calls] = process.argv.slice(2);
const ort = require(ortNode);

(async () => {
    const session = await ort.InferenceSession.create(model, {
        intraOpNumThreads: Number(threads),
        interOpNumThreads: 1,
        executionMode: 'sequential',
        graphOptimizationLevel: 'all',
    });
    const width = 8 * 64;
    const input = () => {
        const data = new Float32Array(Number(n) * width);
        for (let i = 0; i < data.length; i++) {
            data[i] = Math.random() * 2 - 1;
        }
        return new ort.Tensor('float32', data, [1, Number(n), width]);
    };
    const feeds = {query: input(), key: input(), value: input()};
    await session.run(feeds);   // the warm-up
    let best = Infinity;
    for (let i = 0; i < Number(calls); i++) {
        const start = process.hrtime.bigint();
        await session.run(feeds);
        best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e6);
    }
    const version = ort.env && ort.env.versions ? ort.env.versions.common : '?';
    console.log(`onnxruntime ${version} seq=${n} causal=${causal} threads=${threads} ` +
                `mha_ms=${best.toFixed(1)}`);
})().catch((error) => {
    console.error(String(error));
    process.exit(1);
});
