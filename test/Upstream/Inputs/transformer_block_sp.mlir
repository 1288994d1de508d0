// transformer_block.mlir with the sequence, not the batch, over grid axis 0
// (sequence parallel; axis 1 still tensor parallel over heads and the MLP
// hidden features): the queries' rows are local, the keys and values are
// all-gathered over the sequence, p^T v's reduction over the query rows is
// an all-to-all and an all-reduce. A template:
// transformer_block.test and bench/shard/transformer.sh substitute
//   @GRID@ = SPxTP, @B@ = batch, @S@ = sequence (a multiple of SP),
//   @N@ = heads (a multiple of TP), @F@ = MLP hidden (a multiple of TP).
// Fixed: hidden 8, head dim 2.
//   forward:  xn = rms(x) g1; q,k,v[b,s,n,d] = xn wq,wk,wv;
//             p = softmax_t(q.k / sqrt 2) (max-subtract, exp, sum, divide);
//             o = p v; x1 = x + o wo; xm = rms(x1) g2;
//             y = x1 + tanh(xm w1) w2
//   backward: from dy, through the MLP, RMSNorm 2, the residual and the
//             output projection: dw2, dw1, dg2, dx1 (the residual stream's
//             gradient), dwo, dao (the attention output's); through p v:
//             dv, dwv; through the softmax: dp, ds, dq, dk, dwq, dwk and
//             dxn (as in transformer_block.mlir).
shard.grid @grid(shape = @GRID@)

func.func @transformer_block(
    %x: tensor<@B@x@S@x8xf32>, %g1: tensor<8xf32>,
    %wq: tensor<8x@N@x2xf32>, %wk: tensor<8x@N@x2xf32>, %wv: tensor<8x@N@x2xf32>,
    %wo: tensor<@N@x2x8xf32>, %g2: tensor<8xf32>,
    %w1: tensor<8x@F@xf32>, %w2: tensor<@F@x8xf32>, %dy: tensor<@B@x@S@x8xf32>)
    -> (tensor<@B@x@S@x8xf32>, tensor<@B@x@S@x8xf32>, tensor<@B@x@S@x@N@x2xf32>, tensor<8x@N@x2xf32>,
        tensor<@N@x2x8xf32>, tensor<8xf32>, tensor<8x@F@xf32>, tensor<@F@x8xf32>,
        tensor<8x@N@x2xf32>, tensor<8x@N@x2xf32>, tensor<@B@x@S@x8xf32>) {
  %rows = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %repl = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %col = shard.sharding @grid split_axes = [[], [1]] : !shard.sharding
  %row = shard.sharding @grid split_axes = [[1]] : !shard.sharding
  %heads4 = shard.sharding @grid split_axes = [[], [0], [1]] : !shard.sharding
  %hid = shard.sharding @grid split_axes = [[], [0], [1]] : !shard.sharding
  %bn = shard.sharding @grid split_axes = [[], [1], [0]] : !shard.sharding
  %xs = shard.shard %x to %rows : tensor<@B@x@S@x8xf32>
  %dys = shard.shard %dy to %rows : tensor<@B@x@S@x8xf32>
  %g1s = shard.shard %g1 to %repl : tensor<8xf32>
  %g2s = shard.shard %g2 to %repl : tensor<8xf32>
  %wqs = shard.shard %wq to %col : tensor<8x@N@x2xf32>
  %wks = shard.shard %wk to %col : tensor<8x@N@x2xf32>
  %wvs = shard.shard %wv to %col : tensor<8x@N@x2xf32>
  %wos = shard.shard %wo to %row : tensor<@N@x2x8xf32>
  %w1s = shard.shard %w1 to %col : tensor<8x@F@xf32>
  %w2s = shard.shard %w2 to %row : tensor<@F@x8xf32>

  %c0 = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e_bs = tensor.empty() : tensor<@B@x@S@xf32>
  %z_bs = linalg.fill ins(%c0 : f32) outs(%e_bs : tensor<@B@x@S@xf32>) -> tensor<@B@x@S@xf32>
  %e_bsh = tensor.empty() : tensor<@B@x@S@x8xf32>
  %z_bsh = linalg.fill ins(%c0 : f32) outs(%e_bsh : tensor<@B@x@S@x8xf32>) -> tensor<@B@x@S@x8xf32>
  %e_q = tensor.empty() : tensor<@B@x@S@x@N@x2xf32>
  %z_q = linalg.fill ins(%c0 : f32) outs(%e_q : tensor<@B@x@S@x@N@x2xf32>) -> tensor<@B@x@S@x@N@x2xf32>
  %e_sc = tensor.empty() : tensor<@B@x@N@x@S@x@S@xf32>
  %z_sc = linalg.fill ins(%c0 : f32) outs(%e_sc : tensor<@B@x@N@x@S@x@S@xf32>) -> tensor<@B@x@N@x@S@x@S@xf32>
  %e_m = tensor.empty() : tensor<@B@x@N@x@S@xf32>
  %z_m = linalg.fill ins(%c0 : f32) outs(%e_m : tensor<@B@x@N@x@S@xf32>) -> tensor<@B@x@N@x@S@xf32>
  %i_m = linalg.fill ins(%ninf : f32) outs(%e_m : tensor<@B@x@N@x@S@xf32>) -> tensor<@B@x@N@x@S@xf32>
  %e_hf = tensor.empty() : tensor<@B@x@S@x@F@xf32>
  %z_hf = linalg.fill ins(%c0 : f32) outs(%e_hf : tensor<@B@x@S@x@F@xf32>) -> tensor<@B@x@S@x@F@xf32>
  %e_w = tensor.empty() : tensor<8x@N@x2xf32>
  %z_w = linalg.fill ins(%c0 : f32) outs(%e_w : tensor<8x@N@x2xf32>) -> tensor<8x@N@x2xf32>
  %e_wo = tensor.empty() : tensor<@N@x2x8xf32>
  %z_wo = linalg.fill ins(%c0 : f32) outs(%e_wo : tensor<@N@x2x8xf32>) -> tensor<@N@x2x8xf32>
  %e_w1 = tensor.empty() : tensor<8x@F@xf32>
  %z_w1 = linalg.fill ins(%c0 : f32) outs(%e_w1 : tensor<8x@F@xf32>) -> tensor<8x@F@xf32>
  %e_w2 = tensor.empty() : tensor<@F@x8xf32>
  %z_w2 = linalg.fill ins(%c0 : f32) outs(%e_w2 : tensor<@F@x8xf32>) -> tensor<@F@x8xf32>
  %e_g = tensor.empty() : tensor<8xf32>
  %z_g = linalg.fill ins(%c0 : f32) outs(%e_g : tensor<8xf32>) -> tensor<8xf32>

  // ---- RMSNorm 1: r1 = rsqrt(mean_h x^2 + eps), xn = x r1 g1
  %ss1 = linalg.generic {indexing_maps = [affine_map<(b, s, h) -> (b, s, h)>, affine_map<(b, s, h) -> (b, s)>],
                         iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%xs : tensor<@B@x@S@x8xf32>) outs(%z_bs : tensor<@B@x@S@xf32>) {
    ^bb0(%a: f32, %o: f32):
      %t = arith.mulf %a, %a : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@xf32>
  %ss1_s = shard.shard %ss1 to %rows : tensor<@B@x@S@xf32>
  %r1 = linalg.generic {indexing_maps = [affine_map<(b, s) -> (b, s)>, affine_map<(b, s) -> (b, s)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%ss1_s : tensor<@B@x@S@xf32>) outs(%e_bs : tensor<@B@x@S@xf32>) {
    ^bb0(%a: f32, %o: f32):
      %inv = arith.constant 0.125 : f32
      %eps = arith.constant 1.0e-05 : f32
      %m = arith.mulf %a, %inv : f32
      %me = arith.addf %m, %eps : f32
      %r = math.rsqrt %me : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@xf32>
  %r1_s = shard.shard %r1 to %rows : tensor<@B@x@S@xf32>
  %xn = linalg.generic {indexing_maps = [affine_map<(b, s, h) -> (b, s, h)>, affine_map<(b, s, h) -> (b, s)>,
                                         affine_map<(b, s, h) -> (h)>, affine_map<(b, s, h) -> (b, s, h)>],
                        iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%xs, %r1_s, %g1s : tensor<@B@x@S@x8xf32>, tensor<@B@x@S@xf32>, tensor<8xf32>) outs(%e_bsh : tensor<@B@x@S@x8xf32>) {
    ^bb0(%a: f32, %r: f32, %g: f32, %o: f32):
      %t = arith.mulf %a, %r : f32
      %u = arith.mulf %t, %g : f32
      linalg.yield %u : f32
  } -> tensor<@B@x@S@x8xf32>
  %xn_s = shard.shard %xn to %rows : tensor<@B@x@S@x8xf32>

  // ---- Q, K, V projections (column-parallel over heads)
  %q = linalg.generic {indexing_maps = [affine_map<(b, s, n, d, h) -> (b, s, h)>, affine_map<(b, s, n, d, h) -> (h, n, d)>,
                                        affine_map<(b, s, n, d, h) -> (b, s, n, d)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%xn_s, %wqs : tensor<@B@x@S@x8xf32>, tensor<8x@N@x2xf32>) outs(%z_q : tensor<@B@x@S@x@N@x2xf32>) {
    ^bb0(%a: f32, %w: f32, %o: f32):
      %t = arith.mulf %a, %w : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@x@N@x2xf32>
  %q_s = shard.shard %q to %heads4 : tensor<@B@x@S@x@N@x2xf32>
  %k = linalg.generic {indexing_maps = [affine_map<(b, s, n, d, h) -> (b, s, h)>, affine_map<(b, s, n, d, h) -> (h, n, d)>,
                                        affine_map<(b, s, n, d, h) -> (b, s, n, d)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%xn_s, %wks : tensor<@B@x@S@x8xf32>, tensor<8x@N@x2xf32>) outs(%z_q : tensor<@B@x@S@x@N@x2xf32>) {
    ^bb0(%a: f32, %w: f32, %o: f32):
      %t = arith.mulf %a, %w : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@x@N@x2xf32>
  %k_s = shard.shard %k to %heads4 : tensor<@B@x@S@x@N@x2xf32>
  %v = linalg.generic {indexing_maps = [affine_map<(b, s, n, d, h) -> (b, s, h)>, affine_map<(b, s, n, d, h) -> (h, n, d)>,
                                        affine_map<(b, s, n, d, h) -> (b, s, n, d)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%xn_s, %wvs : tensor<@B@x@S@x8xf32>, tensor<8x@N@x2xf32>) outs(%z_q : tensor<@B@x@S@x@N@x2xf32>) {
    ^bb0(%a: f32, %w: f32, %o: f32):
      %t = arith.mulf %a, %w : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@x@N@x2xf32>
  %v_s = shard.shard %v to %heads4 : tensor<@B@x@S@x@N@x2xf32>

  // ---- scores[b,n,s,t] = q[b,s,n,:] . k[b,t,n,:] / sqrt(2); softmax over t
  %sc = linalg.generic {indexing_maps = [affine_map<(b, n, s, t, d) -> (b, s, n, d)>, affine_map<(b, n, s, t, d) -> (b, t, n, d)>,
                                         affine_map<(b, n, s, t, d) -> (b, n, s, t)>],
                        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q_s, %k_s : tensor<@B@x@S@x@N@x2xf32>, tensor<@B@x@S@x@N@x2xf32>) outs(%z_sc : tensor<@B@x@N@x@S@x@S@xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %scale = arith.constant 0.70710677 : f32
      %t = arith.mulf %a, %c : f32
      %u = arith.mulf %t, %scale : f32
      %r = arith.addf %o, %u : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@N@x@S@x@S@xf32>
  %sc_s = shard.shard %sc to %bn : tensor<@B@x@N@x@S@x@S@xf32>
  %mx = linalg.generic {indexing_maps = [affine_map<(b, n, s, t) -> (b, n, s, t)>, affine_map<(b, n, s, t) -> (b, n, s)>],
                        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%sc_s : tensor<@B@x@N@x@S@x@S@xf32>) outs(%i_m : tensor<@B@x@N@x@S@xf32>) {
    ^bb0(%a: f32, %o: f32):
      %r = arith.maximumf %o, %a : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@N@x@S@xf32>
  %mx_s = shard.shard %mx to %bn : tensor<@B@x@N@x@S@xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(b, n, s, t) -> (b, n, s, t)>, affine_map<(b, n, s, t) -> (b, n, s)>,
                                         affine_map<(b, n, s, t) -> (b, n, s, t)>],
                        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%sc_s, %mx_s : tensor<@B@x@N@x@S@x@S@xf32>, tensor<@B@x@N@x@S@xf32>) outs(%e_sc : tensor<@B@x@N@x@S@x@S@xf32>) {
    ^bb0(%a: f32, %m: f32, %o: f32):
      %t = arith.subf %a, %m : f32
      %r = math.exp %t : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@N@x@S@x@S@xf32>
  %ex_s = shard.shard %ex to %bn : tensor<@B@x@N@x@S@x@S@xf32>
  %den = linalg.generic {indexing_maps = [affine_map<(b, n, s, t) -> (b, n, s, t)>, affine_map<(b, n, s, t) -> (b, n, s)>],
                         iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ex_s : tensor<@B@x@N@x@S@x@S@xf32>) outs(%z_m : tensor<@B@x@N@x@S@xf32>) {
    ^bb0(%a: f32, %o: f32):
      %r = arith.addf %o, %a : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@N@x@S@xf32>
  %den_s = shard.shard %den to %bn : tensor<@B@x@N@x@S@xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(b, n, s, t) -> (b, n, s, t)>, affine_map<(b, n, s, t) -> (b, n, s)>,
                                        affine_map<(b, n, s, t) -> (b, n, s, t)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ex_s, %den_s : tensor<@B@x@N@x@S@x@S@xf32>, tensor<@B@x@N@x@S@xf32>) outs(%e_sc : tensor<@B@x@N@x@S@x@S@xf32>) {
    ^bb0(%a: f32, %l: f32, %o: f32):
      %r = arith.divf %a, %l : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@N@x@S@x@S@xf32>
  %p_s = shard.shard %p to %bn : tensor<@B@x@N@x@S@x@S@xf32>

  // ---- o = p v; attention output projection (row-parallel: all-reduce over axis 1)
  %ao = linalg.generic {indexing_maps = [affine_map<(b, s, n, d, t) -> (b, n, s, t)>, affine_map<(b, s, n, d, t) -> (b, t, n, d)>,
                                         affine_map<(b, s, n, d, t) -> (b, s, n, d)>],
                        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p_s, %v_s : tensor<@B@x@N@x@S@x@S@xf32>, tensor<@B@x@S@x@N@x2xf32>) outs(%z_q : tensor<@B@x@S@x@N@x2xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %t = arith.mulf %a, %c : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@x@N@x2xf32>
  %ao_s = shard.shard %ao to %heads4 : tensor<@B@x@S@x@N@x2xf32>
  %att = linalg.generic {indexing_maps = [affine_map<(b, s, h, n, d) -> (b, s, n, d)>, affine_map<(b, s, h, n, d) -> (n, d, h)>,
                                          affine_map<(b, s, h, n, d) -> (b, s, h)>],
                         iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%ao_s, %wos : tensor<@B@x@S@x@N@x2xf32>, tensor<@N@x2x8xf32>) outs(%z_bsh : tensor<@B@x@S@x8xf32>) {
    ^bb0(%a: f32, %w: f32, %o: f32):
      %t = arith.mulf %a, %w : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@x8xf32>
  %att_s = shard.shard %att to %rows : tensor<@B@x@S@x8xf32>
  %x1 = linalg.generic {indexing_maps = [affine_map<(b, s, h) -> (b, s, h)>, affine_map<(b, s, h) -> (b, s, h)>,
                                         affine_map<(b, s, h) -> (b, s, h)>],
                        iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%xs, %att_s : tensor<@B@x@S@x8xf32>, tensor<@B@x@S@x8xf32>) outs(%e_bsh : tensor<@B@x@S@x8xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %r = arith.addf %a, %c : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@x8xf32>
  %x1_s = shard.shard %x1 to %rows : tensor<@B@x@S@x8xf32>

  // ---- RMSNorm 2
  %ss2 = linalg.generic {indexing_maps = [affine_map<(b, s, h) -> (b, s, h)>, affine_map<(b, s, h) -> (b, s)>],
                         iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x1_s : tensor<@B@x@S@x8xf32>) outs(%z_bs : tensor<@B@x@S@xf32>) {
    ^bb0(%a: f32, %o: f32):
      %t = arith.mulf %a, %a : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@xf32>
  %ss2_s = shard.shard %ss2 to %rows : tensor<@B@x@S@xf32>
  %r2 = linalg.generic {indexing_maps = [affine_map<(b, s) -> (b, s)>, affine_map<(b, s) -> (b, s)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%ss2_s : tensor<@B@x@S@xf32>) outs(%e_bs : tensor<@B@x@S@xf32>) {
    ^bb0(%a: f32, %o: f32):
      %inv = arith.constant 0.125 : f32
      %eps = arith.constant 1.0e-05 : f32
      %m = arith.mulf %a, %inv : f32
      %me = arith.addf %m, %eps : f32
      %r = math.rsqrt %me : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@xf32>
  %r2_s = shard.shard %r2 to %rows : tensor<@B@x@S@xf32>
  %xm = linalg.generic {indexing_maps = [affine_map<(b, s, h) -> (b, s, h)>, affine_map<(b, s, h) -> (b, s)>,
                                         affine_map<(b, s, h) -> (h)>, affine_map<(b, s, h) -> (b, s, h)>],
                        iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x1_s, %r2_s, %g2s : tensor<@B@x@S@x8xf32>, tensor<@B@x@S@xf32>, tensor<8xf32>) outs(%e_bsh : tensor<@B@x@S@x8xf32>) {
    ^bb0(%a: f32, %r: f32, %g: f32, %o: f32):
      %t = arith.mulf %a, %r : f32
      %u = arith.mulf %t, %g : f32
      linalg.yield %u : f32
  } -> tensor<@B@x@S@x8xf32>
  %xm_s = shard.shard %xm to %rows : tensor<@B@x@S@x8xf32>

  // ---- MLP: column-parallel w1, tanh, row-parallel w2; residual
  %h1 = linalg.generic {indexing_maps = [affine_map<(b, s, f, h) -> (b, s, h)>, affine_map<(b, s, f, h) -> (h, f)>,
                                         affine_map<(b, s, f, h) -> (b, s, f)>],
                        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%xm_s, %w1s : tensor<@B@x@S@x8xf32>, tensor<8x@F@xf32>) outs(%z_hf : tensor<@B@x@S@x@F@xf32>) {
    ^bb0(%a: f32, %w: f32, %o: f32):
      %t = arith.mulf %a, %w : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@x@F@xf32>
  %h1_s = shard.shard %h1 to %hid : tensor<@B@x@S@x@F@xf32>
  %act = linalg.generic {indexing_maps = [affine_map<(b, s, f) -> (b, s, f)>, affine_map<(b, s, f) -> (b, s, f)>],
                         iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%h1_s : tensor<@B@x@S@x@F@xf32>) outs(%e_hf : tensor<@B@x@S@x@F@xf32>) {
    ^bb0(%a: f32, %o: f32):
      %r = math.tanh %a : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@x@F@xf32>
  %act_s = shard.shard %act to %hid : tensor<@B@x@S@x@F@xf32>
  %h2 = linalg.generic {indexing_maps = [affine_map<(b, s, h, f) -> (b, s, f)>, affine_map<(b, s, h, f) -> (f, h)>,
                                         affine_map<(b, s, h, f) -> (b, s, h)>],
                        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%act_s, %w2s : tensor<@B@x@S@x@F@xf32>, tensor<@F@x8xf32>) outs(%z_bsh : tensor<@B@x@S@x8xf32>) {
    ^bb0(%a: f32, %w: f32, %o: f32):
      %t = arith.mulf %a, %w : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@x8xf32>
  %h2_s = shard.shard %h2 to %rows : tensor<@B@x@S@x8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(b, s, h) -> (b, s, h)>, affine_map<(b, s, h) -> (b, s, h)>,
                                        affine_map<(b, s, h) -> (b, s, h)>],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x1_s, %h2_s : tensor<@B@x@S@x8xf32>, tensor<@B@x@S@x8xf32>) outs(%e_bsh : tensor<@B@x@S@x8xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %r = arith.addf %a, %c : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@x8xf32>

  // ================= backward, from dy =================
  // ---- MLP: dw2 = act^T dy (all-reduce over axis 0), da = dy w2^T,
  //      dh1 = da (1 - act^2), dw1 = xm^T dh1, dxm = dh1 w1^T (all-reduce over axis 1)
  %dw2 = linalg.generic {indexing_maps = [affine_map<(f, h, b, s) -> (b, s, f)>, affine_map<(f, h, b, s) -> (b, s, h)>,
                                          affine_map<(f, h, b, s) -> (f, h)>],
                         iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%act_s, %dys : tensor<@B@x@S@x@F@xf32>, tensor<@B@x@S@x8xf32>) outs(%z_w2 : tensor<@F@x8xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %t = arith.mulf %a, %c : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<@F@x8xf32>
  %da = linalg.generic {indexing_maps = [affine_map<(b, s, f, h) -> (b, s, h)>, affine_map<(b, s, f, h) -> (f, h)>,
                                         affine_map<(b, s, f, h) -> (b, s, f)>],
                        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%dys, %w2s : tensor<@B@x@S@x8xf32>, tensor<@F@x8xf32>) outs(%z_hf : tensor<@B@x@S@x@F@xf32>) {
    ^bb0(%a: f32, %w: f32, %o: f32):
      %t = arith.mulf %a, %w : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@x@F@xf32>
  %da_s = shard.shard %da to %hid : tensor<@B@x@S@x@F@xf32>
  %dh1 = linalg.generic {indexing_maps = [affine_map<(b, s, f) -> (b, s, f)>, affine_map<(b, s, f) -> (b, s, f)>,
                                          affine_map<(b, s, f) -> (b, s, f)>],
                         iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%da_s, %act_s : tensor<@B@x@S@x@F@xf32>, tensor<@B@x@S@x@F@xf32>) outs(%e_hf : tensor<@B@x@S@x@F@xf32>) {
    ^bb0(%g: f32, %a: f32, %o: f32):
      %one = arith.constant 1.0 : f32
      %aa = arith.mulf %a, %a : f32
      %d = arith.subf %one, %aa : f32
      %r = arith.mulf %g, %d : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@x@F@xf32>
  %dh1_s = shard.shard %dh1 to %hid : tensor<@B@x@S@x@F@xf32>
  %dw1 = linalg.generic {indexing_maps = [affine_map<(h, f, b, s) -> (b, s, h)>, affine_map<(h, f, b, s) -> (b, s, f)>,
                                          affine_map<(h, f, b, s) -> (h, f)>],
                         iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%xm_s, %dh1_s : tensor<@B@x@S@x8xf32>, tensor<@B@x@S@x@F@xf32>) outs(%z_w1 : tensor<8x@F@xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %t = arith.mulf %a, %c : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<8x@F@xf32>
  %dxm = linalg.generic {indexing_maps = [affine_map<(b, s, h, f) -> (b, s, f)>, affine_map<(b, s, h, f) -> (h, f)>,
                                          affine_map<(b, s, h, f) -> (b, s, h)>],
                         iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%dh1_s, %w1s : tensor<@B@x@S@x@F@xf32>, tensor<8x@F@xf32>) outs(%z_bsh : tensor<@B@x@S@x8xf32>) {
    ^bb0(%a: f32, %w: f32, %o: f32):
      %t = arith.mulf %a, %w : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@x8xf32>
  %dxm_s = shard.shard %dxm to %rows : tensor<@B@x@S@x8xf32>

  // ---- RMSNorm 2 backward: dx1 = dy + r2 g2 dxm - x1 r2^3 / 8 * sum_h(g2 dxm x1);
  //      dg2 = sum_{b,s} dxm x1 r2 (all-reduce over axis 0)
  %t2 = linalg.generic {indexing_maps = [affine_map<(b, s, h) -> (b, s, h)>, affine_map<(b, s, h) -> (b, s, h)>,
                                         affine_map<(b, s, h) -> (h)>, affine_map<(b, s, h) -> (b, s)>],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dxm_s, %x1_s, %g2s : tensor<@B@x@S@x8xf32>, tensor<@B@x@S@x8xf32>, tensor<8xf32>) outs(%z_bs : tensor<@B@x@S@xf32>) {
    ^bb0(%d: f32, %a: f32, %g: f32, %o: f32):
      %t = arith.mulf %d, %a : f32
      %u = arith.mulf %t, %g : f32
      %r = arith.addf %o, %u : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@xf32>
  %t2_s = shard.shard %t2 to %rows : tensor<@B@x@S@xf32>
  %dx1 = linalg.generic {indexing_maps = [affine_map<(b, s, h) -> (b, s, h)>, affine_map<(b, s, h) -> (b, s, h)>,
                                          affine_map<(b, s, h) -> (b, s, h)>, affine_map<(b, s, h) -> (b, s)>,
                                          affine_map<(b, s, h) -> (b, s)>, affine_map<(b, s, h) -> (h)>,
                                          affine_map<(b, s, h) -> (b, s, h)>],
                         iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dys, %dxm_s, %x1_s, %r2_s, %t2_s, %g2s : tensor<@B@x@S@x8xf32>, tensor<@B@x@S@x8xf32>, tensor<@B@x@S@x8xf32>,
                                            tensor<@B@x@S@xf32>, tensor<@B@x@S@xf32>, tensor<8xf32>)
      outs(%e_bsh : tensor<@B@x@S@x8xf32>) {
    ^bb0(%up: f32, %d: f32, %a: f32, %r: f32, %t: f32, %g: f32, %o: f32):
      %inv = arith.constant 0.125 : f32
      %rg = arith.mulf %r, %g : f32
      %lhs = arith.mulf %rg, %d : f32
      %r2b = arith.mulf %r, %r : f32
      %r3 = arith.mulf %r2b, %r : f32
      %ar3 = arith.mulf %a, %r3 : f32
      %ar3t = arith.mulf %ar3, %t : f32
      %rhs = arith.mulf %ar3t, %inv : f32
      %dn = arith.subf %lhs, %rhs : f32
      %res = arith.addf %up, %dn : f32
      linalg.yield %res : f32
  } -> tensor<@B@x@S@x8xf32>
  %dx1_s = shard.shard %dx1 to %rows : tensor<@B@x@S@x8xf32>
  %dg2 = linalg.generic {indexing_maps = [affine_map<(h, b, s) -> (b, s, h)>, affine_map<(h, b, s) -> (b, s, h)>,
                                          affine_map<(h, b, s) -> (b, s)>, affine_map<(h, b, s) -> (h)>],
                         iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%dxm_s, %x1_s, %r2_s : tensor<@B@x@S@x8xf32>, tensor<@B@x@S@x8xf32>, tensor<@B@x@S@xf32>) outs(%z_g : tensor<8xf32>) {
    ^bb0(%d: f32, %a: f32, %r: f32, %o: f32):
      %t = arith.mulf %d, %a : f32
      %u = arith.mulf %t, %r : f32
      %s = arith.addf %o, %u : f32
      linalg.yield %s : f32
  } -> tensor<8xf32>

  // ---- output projection: dwo = ao^T dx1 (all-reduce over axis 0), dao = dx1 wo^T
  %dwo = linalg.generic {indexing_maps = [affine_map<(n, d, h, b, s) -> (b, s, n, d)>, affine_map<(n, d, h, b, s) -> (b, s, h)>,
                                          affine_map<(n, d, h, b, s) -> (n, d, h)>],
                         iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%ao_s, %dx1_s : tensor<@B@x@S@x@N@x2xf32>, tensor<@B@x@S@x8xf32>) outs(%z_wo : tensor<@N@x2x8xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %t = arith.mulf %a, %c : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<@N@x2x8xf32>
  %dao = linalg.generic {indexing_maps = [affine_map<(b, s, n, d, h) -> (b, s, h)>, affine_map<(b, s, n, d, h) -> (n, d, h)>,
                                          affine_map<(b, s, n, d, h) -> (b, s, n, d)>],
                         iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%dx1_s, %wos : tensor<@B@x@S@x8xf32>, tensor<@N@x2x8xf32>) outs(%z_q : tensor<@B@x@S@x@N@x2xf32>) {
    ^bb0(%a: f32, %w: f32, %o: f32):
      %t = arith.mulf %a, %w : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@x@N@x2xf32>
  %dao_s = shard.shard %dao to %heads4 : tensor<@B@x@S@x@N@x2xf32>

  // ---- attention: dv = p^T dao; dwv = xn^T dv (all-reduce over axis 0)
  %dv = linalg.generic {indexing_maps = [affine_map<(b, t, n, d, s) -> (b, n, s, t)>, affine_map<(b, t, n, d, s) -> (b, s, n, d)>,
                                         affine_map<(b, t, n, d, s) -> (b, t, n, d)>],
                        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p_s, %dao_s : tensor<@B@x@N@x@S@x@S@xf32>, tensor<@B@x@S@x@N@x2xf32>) outs(%z_q : tensor<@B@x@S@x@N@x2xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %t = arith.mulf %a, %c : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@x@N@x2xf32>
  %dv_s = shard.shard %dv to %heads4 : tensor<@B@x@S@x@N@x2xf32>

  %dwv = linalg.generic {indexing_maps = [affine_map<(h, n, d, b, s) -> (b, s, h)>, affine_map<(h, n, d, b, s) -> (b, s, n, d)>,
                                          affine_map<(h, n, d, b, s) -> (h, n, d)>],
                         iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%xn_s, %dv_s : tensor<@B@x@S@x8xf32>, tensor<@B@x@S@x@N@x2xf32>) outs(%z_w : tensor<8x@N@x2xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %t = arith.mulf %a, %c : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<8x@N@x2xf32>

  // ---- softmax backward: dp[b,n,s,t] = dao[b,s,n,:] . v[b,t,n,:];
  //      ds = p (dp - sum_t p dp) / sqrt 2
  %dp = linalg.generic {indexing_maps = [affine_map<(b, n, s, t, d) -> (b, s, n, d)>, affine_map<(b, n, s, t, d) -> (b, t, n, d)>,
                                         affine_map<(b, n, s, t, d) -> (b, n, s, t)>],
                        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%dao_s, %v_s : tensor<@B@x@S@x@N@x2xf32>, tensor<@B@x@S@x@N@x2xf32>) outs(%z_sc : tensor<@B@x@N@x@S@x@S@xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %t = arith.mulf %a, %c : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@N@x@S@x@S@xf32>
  %dp_s = shard.shard %dp to %bn : tensor<@B@x@N@x@S@x@S@xf32>
  %pdp = linalg.generic {indexing_maps = [affine_map<(b, n, s, t) -> (b, n, s, t)>, affine_map<(b, n, s, t) -> (b, n, s, t)>,
                                          affine_map<(b, n, s, t) -> (b, n, s)>],
                         iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%p_s, %dp_s : tensor<@B@x@N@x@S@x@S@xf32>, tensor<@B@x@N@x@S@x@S@xf32>) outs(%z_m : tensor<@B@x@N@x@S@xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %t = arith.mulf %a, %c : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@N@x@S@xf32>
  %pdp_s = shard.shard %pdp to %bn : tensor<@B@x@N@x@S@xf32>
  %ds = linalg.generic {indexing_maps = [affine_map<(b, n, s, t) -> (b, n, s, t)>, affine_map<(b, n, s, t) -> (b, n, s, t)>,
                                         affine_map<(b, n, s, t) -> (b, n, s)>, affine_map<(b, n, s, t) -> (b, n, s, t)>],
                        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%p_s, %dp_s, %pdp_s : tensor<@B@x@N@x@S@x@S@xf32>, tensor<@B@x@N@x@S@x@S@xf32>, tensor<@B@x@N@x@S@xf32>)
      outs(%e_sc : tensor<@B@x@N@x@S@x@S@xf32>) {
    ^bb0(%a: f32, %c: f32, %m: f32, %o: f32):
      %scale = arith.constant 0.70710677 : f32
      %u = arith.subf %c, %m : f32
      %w = arith.mulf %a, %u : f32
      %r = arith.mulf %w, %scale : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@N@x@S@x@S@xf32>
  %ds_s = shard.shard %ds to %bn : tensor<@B@x@N@x@S@x@S@xf32>

  // ---- dq = ds k, dk = ds^T q (per head); dwq = xn^T dq, dwk = xn^T dk
  //      (all-reduce over axis 0)
  %dq = linalg.generic {indexing_maps = [affine_map<(b, s, n, d, t) -> (b, n, s, t)>, affine_map<(b, s, n, d, t) -> (b, t, n, d)>,
                                         affine_map<(b, s, n, d, t) -> (b, s, n, d)>],
                        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%ds_s, %k_s : tensor<@B@x@N@x@S@x@S@xf32>, tensor<@B@x@S@x@N@x2xf32>) outs(%z_q : tensor<@B@x@S@x@N@x2xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %t = arith.mulf %a, %c : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@x@N@x2xf32>
  %dq_s = shard.shard %dq to %heads4 : tensor<@B@x@S@x@N@x2xf32>
  %dk = linalg.generic {indexing_maps = [affine_map<(b, t, n, d, s) -> (b, n, s, t)>, affine_map<(b, t, n, d, s) -> (b, s, n, d)>,
                                         affine_map<(b, t, n, d, s) -> (b, t, n, d)>],
                        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%ds_s, %q_s : tensor<@B@x@N@x@S@x@S@xf32>, tensor<@B@x@S@x@N@x2xf32>) outs(%z_q : tensor<@B@x@S@x@N@x2xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %t = arith.mulf %a, %c : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@x@N@x2xf32>
  %dk_s = shard.shard %dk to %heads4 : tensor<@B@x@S@x@N@x2xf32>
  %dwq = linalg.generic {indexing_maps = [affine_map<(h, n, d, b, s) -> (b, s, h)>, affine_map<(h, n, d, b, s) -> (b, s, n, d)>,
                                          affine_map<(h, n, d, b, s) -> (h, n, d)>],
                         iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%xn_s, %dq_s : tensor<@B@x@S@x8xf32>, tensor<@B@x@S@x@N@x2xf32>) outs(%z_w : tensor<8x@N@x2xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %t = arith.mulf %a, %c : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<8x@N@x2xf32>
  %dwk = linalg.generic {indexing_maps = [affine_map<(h, n, d, b, s) -> (b, s, h)>, affine_map<(h, n, d, b, s) -> (b, s, n, d)>,
                                          affine_map<(h, n, d, b, s) -> (h, n, d)>],
                         iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%xn_s, %dk_s : tensor<@B@x@S@x8xf32>, tensor<@B@x@S@x@N@x2xf32>) outs(%z_w : tensor<8x@N@x2xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %t = arith.mulf %a, %c : f32
      %r = arith.addf %o, %t : f32
      linalg.yield %r : f32
  } -> tensor<8x@N@x2xf32>

  // ---- dxn = dq wq^T + dk wk^T + dv wv^T (row-parallel: all-reduce over axis 1)
  %dxn = linalg.generic {indexing_maps = [affine_map<(b, s, h, n, d) -> (b, s, n, d)>, affine_map<(b, s, h, n, d) -> (h, n, d)>,
                                          affine_map<(b, s, h, n, d) -> (b, s, n, d)>, affine_map<(b, s, h, n, d) -> (h, n, d)>,
                                          affine_map<(b, s, h, n, d) -> (b, s, n, d)>, affine_map<(b, s, h, n, d) -> (h, n, d)>,
                                          affine_map<(b, s, h, n, d) -> (b, s, h)>],
                         iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%dq_s, %wqs, %dk_s, %wks, %dv_s, %wvs : tensor<@B@x@S@x@N@x2xf32>, tensor<8x@N@x2xf32>, tensor<@B@x@S@x@N@x2xf32>,
                                             tensor<8x@N@x2xf32>, tensor<@B@x@S@x@N@x2xf32>, tensor<8x@N@x2xf32>)
      outs(%z_bsh : tensor<@B@x@S@x8xf32>) {
    ^bb0(%a: f32, %wa: f32, %c: f32, %wc: f32, %e: f32, %we: f32, %o: f32):
      %m1 = arith.mulf %a, %wa : f32
      %m2 = arith.mulf %c, %wc : f32
      %m3 = arith.mulf %e, %we : f32
      %s12 = arith.addf %m1, %m2 : f32
      %s123 = arith.addf %s12, %m3 : f32
      %r = arith.addf %o, %s123 : f32
      linalg.yield %r : f32
  } -> tensor<@B@x@S@x8xf32>
  %dxn_s = shard.shard %dxn to %rows : tensor<@B@x@S@x8xf32>

  %ys = shard.shard %y to %rows : tensor<@B@x@S@x8xf32>
  %dwvs = shard.shard %dwv to %col : tensor<8x@N@x2xf32>
  %dwos = shard.shard %dwo to %row : tensor<@N@x2x8xf32>
  %dg2s = shard.shard %dg2 to %repl : tensor<8xf32>
  %dw1s = shard.shard %dw1 to %col : tensor<8x@F@xf32>
  %dw2s = shard.shard %dw2 to %row : tensor<@F@x8xf32>
  %dwqs = shard.shard %dwq to %col : tensor<8x@N@x2xf32>
  %dwks = shard.shard %dwk to %col : tensor<8x@N@x2xf32>
  return %ys, %dx1_s, %dao_s, %dwvs, %dwos, %dg2s, %dw1s, %dw2s, %dwqs, %dwks, %dxn_s
      : tensor<@B@x@S@x8xf32>, tensor<@B@x@S@x8xf32>, tensor<@B@x@S@x@N@x2xf32>, tensor<8x@N@x2xf32>,
        tensor<@N@x2x8xf32>, tensor<8xf32>, tensor<8x@F@xf32>, tensor<@F@x8xf32>,
        tensor<8x@N@x2xf32>, tensor<8x@N@x2xf32>, tensor<@B@x@S@x8xf32>
}
