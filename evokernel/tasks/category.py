"""What kind of operator a task is, read from its traced op graph; and the meta-device probe behind it.

KernelBench files carry no category (only our own suites set a ``CATEGORY`` constant, which always
wins). :func:`infer_category` builds the task on PyTorch's *meta* device (shapes and dtypes, no
storage: a 6 GB input costs nothing), traces ``Model.forward`` with ``torch.fx.symbolic_trace``
(falling back to the calls a ``TorchFunctionMode`` recorded while forward ran on meta tensors when fx
cannot trace it), and maps the ops it sees to one category. Anything that goes wrong (the file does
not run, an op has no meta kernel, ...) gives ``uncategorized``; nothing is raised. Results are cached
per task key (the hash of the source).

Executing the task file in this process is acceptable because a task file is the user's own input,
never a candidate; still nothing real is allocated: factories run under ``torch.device("meta")``, a
dispatch mode rewrites every explicit ``device=`` to meta and ``.to(device)``/``.cuda()``/``.cpu()``
are no-ops, so even module-level tensors of a task are meta tensors. The modes are thread-local,
probes hold a lock, and the default dtype and the CPU RNG state a task file may change are restored
afterwards (PyTorch's process-wide default device reads "meta" while a probe runs).

**Op classes.** Every traced op gets a class (names are normalised: ``nn.Conv2d``, ``F.conv2d`` and
``torch.conv2d`` are all ``conv``):

===============  ==============================================================================
matmul           mm, bmm, matmul/@, linear (nn.Linear), einsum, addmm, baddbmm, mv, tensordot, bilinear
convolution      conv1d/2d/3d and conv_transpose1d/2d/3d (functional or modules)
attention        scaled_dot_product_attention, nn.MultiheadAttention
normalization    batch/layer/instance/group/rms norm, local response norm, F.normalize
pooling          max/avg/adaptive/lp pooling 1d-3d
softmax          softmax, log_softmax, softmin
reduction        sum, mean, prod, max/min over a dim (not of two tensors), amax, argmax, logsumexp,
                 var, std, norm, median, all/any ...
scan             cumsum, cumprod, cummax, cummin, logcumsumexp
loss             every *_loss / nn.*Loss, cross_entropy, kl_div, nll_loss, triplet_margin_loss ...
activation       elementwise non-linearities: relu, gelu, sigmoid, tanh, elu, selu, softplus,
                 hardtanh, ..., exp, log, erf, sqrt, abs, clamp, ...
elementwise      arithmetic: add, sub, mul, div, pow, neg, where, maximum/minimum, comparisons
(ignored)        layout and bookkeeping: view/reshape/permute/transpose/cat/stack/narrow/select/
                 flip/triu/tril/diag, dropout, copies, dtype casts, tensor factories
===============  ==============================================================================

**Rules**, first match wins (*anchors* are matmul and convolution; *heavy* classes are
normalization, pooling, softmax, reduction and scan; activation and elementwise ops are *glue*):

1. no recognised op: ``uncategorized``;
1b. a whole model (KernelBench level 3): a recurrent layer (LSTM, GRU, RNN and their cells), or three or more
   anchor ops (matmul, convolution, attention): ``model``; the op mix (ops per class) is kept
   (:func:`infer_op_mix`);
2. attention: an attention op, or at least two matmuls with a softmax between them (and no
   convolution), with nothing else but glue: ``attention``;
3. an anchor alone (several ops of the same anchor class allowed, e.g. a depthwise-separable conv):
   that anchor (``matmul`` / ``convolution``); an anchor with anything else (an epilogue, a second
   anchor class, a norm...): ``fusion`` (KernelBench level 2);
4. a loss op, or a scalar output reduced from two or more input tensors: ``loss``;
5. a reduction whose result is broadcast back (the output has the shape of the input, e.g.
   ``x / x.norm(dim=1, keepdim=True)``, RMS norm written out): ``normalization``;
6. exactly one heavy class (plus any glue): that class; two or more heavy classes: ``fusion``;
7. only glue: ``activation`` if there is a non-linearity, else ``elementwise``.

Category names follow the memory's seed knowledge (``memory/seed/*``) and the built-in suites:
``convolution`` is the paper's *conv*, and ``softmax``/``scan``/``elementwise`` are finer than the
paper's *activation*/*reduction*, so that knowledge items about stable softmax or scans are found.
"""
from __future__ import annotations

import builtins
import re
import warnings
from dataclasses import dataclass, field
from typing import Any

from evokernel.runtime.torch_trace import FX_LOCK as _lock  # one lock for every fx trace of the process

UNCATEGORIZED = "uncategorized"
CATEGORIES = ("matmul", "convolution", "attention", "fusion", "normalization", "pooling", "softmax", "reduction",
              "scan", "loss", "activation", "elementwise", "model", UNCATEGORIZED)
MODEL_ANCHORS = 3  # anchor ops (matmul, convolution, attention) from which a task is a whole model

# ----------------------------------------------------------------------------------- op classes

_MATMUL = {"mm", "bmm", "matmul", "linear", "einsum", "addmm", "baddbmm", "addbmm", "addmv", "mv", "dot", "vdot",
           "inner", "tensordot", "bilinear", "chain_matmul", "multi_dot", "rmatmul", "linear_relu"}
_CONV = {"conv", "conv_transpose", "convolution", "conv_tbc", "lazy_conv", "lazy_conv_transpose"}
_ATTENTION = {"scaled_dot_product_attention", "multihead_attention", "multi_head_attention_forward",
              "transformer_encoder_layer", "transformer_decoder_layer", "transformer"}
_RECURRENT = {"lstm", "gru", "rnn", "lstm_cell", "gru_cell", "rnn_cell", "rnn_tanh", "rnn_relu", "rnn_tanh_cell",
              "rnn_relu_cell"}
_NORM = {"batch_norm", "layer_norm", "instance_norm", "group_norm", "rms_norm", "local_response_norm",
         "normalize", "sync_batch_norm", "cross_map_lrn"}
_POOL = {"max_pool", "avg_pool", "adaptive_max_pool", "adaptive_avg_pool", "lp_pool", "fractional_max_pool",
         "max_pool_with_indices", "max_unpool", "adaptive_max_pool_with_indices"}
_SOFTMAX = {"softmax", "log_softmax", "softmin", "_softmax", "_log_softmax"}
_REDUCTION = {"sum", "mean", "prod", "amax", "amin", "aminmax", "argmax", "argmin", "logsumexp", "std", "var",
              "std_mean", "var_mean", "norm", "vector_norm", "matrix_norm", "frobenius_norm", "nuclear_norm",
              "nansum", "nanmean", "median", "nanmedian", "mode", "all", "any", "count_nonzero", "kthvalue",
              "topk", "cosine_similarity", "pairwise_distance", "dist", "cdist", "trace"}
_MAXMIN = {"max", "min"}  # a reduction over a dim, or elementwise of two tensors
_SCAN = {"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"}
_LOSS = {"cross_entropy", "nll_loss", "kl_div", "binary_cross_entropy", "binary_cross_entropy_with_logits",
         "hinge_embedding_loss", "margin_ranking_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
         "cosine_embedding_loss", "ctc_loss", "poisson_nll_loss", "gaussian_nll_loss", "multilabel_margin_loss",
         "multilabel_soft_margin_loss", "multi_margin_loss", "soft_margin_loss", "smooth_l1_loss", "huber_loss",
         "l1_loss", "mse_loss"}
_ACTIVATION = {"relu", "relu6", "leaky_relu", "prelu", "rrelu", "elu", "selu", "celu", "gelu", "silu", "mish",
               "sigmoid", "tanh", "hardtanh", "hardsigmoid", "hardswish", "hardshrink", "softshrink",
               "tanhshrink", "softplus", "softsign", "logsigmoid", "log_sigmoid", "threshold", "glu", "swish",
               "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "erf", "erfc", "erfinv",
               "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "abs",
               "sign", "sgn", "clamp", "clamp_min", "clamp_max", "clip", "floor", "ceil", "round", "trunc",
               "frac", "logit", "heaviside", "reciprocal", "square_root", "gelu_new", "hard_sigmoid"}
_ELEMENTWISE = {"add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "truediv",
                "floor_divide", "floordiv", "neg", "negative", "pow", "square", "fmod", "mod", "remainder",
                "maximum", "minimum", "fmax", "fmin", "where", "masked_fill", "lerp", "addcmul", "addcdiv",
                "rsub", "radd", "rmul", "rtruediv", "rdiv", "rpow", "eq", "ne", "lt", "gt", "le", "ge", "logical_and",
                "logical_or", "logical_not", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_not", "and_",
                "or_", "invert", "iadd", "isub", "imul", "itruediv", "xlogy", "hypot", "atan2", "copysign",
                "nan_to_num", "scale", "bias_add", "scalar_mul"}
_IGNORED = {"view", "view_as", "reshape", "reshape_as", "permute", "transpose", "t", "contiguous", "flatten",
            "unflatten", "squeeze", "unsqueeze", "expand", "expand_as", "repeat", "repeat_interleave", "tile",
            "getitem", "setitem", "size", "dim", "numel", "narrow", "select", "split", "chunk", "unbind", "cat",
            "concat", "concatenate", "stack", "hstack", "vstack", "flip", "fliplr", "flipud", "roll", "triu",
            "tril", "diag", "diagonal", "diag_embed", "clone", "detach", "to", "type", "float", "half", "double",
            "int", "long", "bool", "bfloat16", "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
            "feature_alpha_dropout", "identity", "zeros_like", "ones_like", "empty_like", "full_like",
            "rand_like", "randn_like", "randint_like", "zeros", "ones", "empty", "full", "arange", "tensor",
            "as_tensor", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "pad", "index_select",
            "gather", "scatter", "masked_select", "take", "take_along_dim", "movedim", "moveaxis", "swapaxes",
            "swapdims", "mT", "T", "get", "getattr", "item", "tolist", "cpu", "cuda", "requires_grad_",
            "contiguous_", "type_as", "sort", "argsort", "flatten_", "unfold", "fold", "pixel_shuffle",
            "pixel_unshuffle", "channel_shuffle", "embedding", "one_hot", "interpolate", "upsample", "sequential",
            "module_list", "parameter", "meshgrid", "broadcast_to", "as_strided", "unsqueeze_", "squeeze_",
            "eye", "linspace", "rand", "randn", "randint", "len", "ndim", "shape", "dtype", "device", "split_with_sizes",
            "tensor_split", "index", "index_put", "index_add", "scatter_add", "scatter_reduce", "nonzero", "bernoulli",
            "uniform_", "normal_", "fill_", "zero_", "copy_", "set_", "float_", "detach_"}

_CLASSES = (("matmul", _MATMUL), ("convolution", _CONV), ("attention", _ATTENTION), ("recurrent", _RECURRENT),
            ("normalization", _NORM),
            ("pooling", _POOL), ("softmax", _SOFTMAX), ("scan", _SCAN), ("loss", _LOSS), ("reduction", _REDUCTION),
            ("activation", _ACTIVATION), ("elementwise", _ELEMENTWISE))
_OP_CLASS = {name: cls for cls, names in _CLASSES for name in names}
ANCHORS = ("matmul", "convolution")
HEAVY = ("normalization", "pooling", "softmax", "reduction", "scan")
GLUE = ("activation", "elementwise")


_MODULES = {"leakyrelu": "leaky_relu", "logsoftmax": "log_softmax", "logsigmoid": "logsigmoid",
            "multiheadattention": "multihead_attention", "convtranspose": "conv_transpose", "batchnorm": "batch_norm",
            "lazybatchnorm": "batch_norm", "syncbatchnorm": "batch_norm", "layernorm": "layer_norm",
            "groupnorm": "group_norm", "instancenorm": "instance_norm", "lazyinstancenorm": "instance_norm",
            "rmsnorm": "rms_norm", "localresponsenorm": "local_response_norm", "crossmaplrn": "local_response_norm",
            "maxpool": "max_pool", "avgpool": "avg_pool", "adaptiveavgpool": "adaptive_avg_pool",
            "adaptivemaxpool": "adaptive_max_pool", "lppool": "lp_pool", "fractionalmaxpool": "fractional_max_pool",
            "maxunpool": "max_unpool", "alphadropout": "dropout", "featurealphadropout": "dropout",
            "upsample": "interpolate", "upsamplingnearest": "interpolate", "upsamplingbilinear": "interpolate",
            "pixelshuffle": "pixel_shuffle", "pixelunshuffle": "pixel_unshuffle", "channelshuffle": "channel_shuffle",
            "lazylinear": "linear", "lazyconv": "conv", "lazyconvtranspose": "conv_transpose",
            "transformerencoderlayer": "transformer_encoder_layer",
            "transformerdecoderlayer": "transformer_decoder_layer", "cosinesimilarity": "cosine_similarity",
            "pairwisedistance": "pairwise_distance", "zeropad": "pad", "constantpad": "pad", "reflectionpad": "pad",
            "replicationpad": "pad", "circularpad": "pad", "softmax2": "softmax"}
_LOSS_MODULES = {"mse": "mse_loss", "crossentropy": "cross_entropy", "kldiv": "kl_div", "smoothl1": "smooth_l1_loss",
                 "huber": "huber_loss", "tripletmargin": "triplet_margin_loss", "bce": "binary_cross_entropy",
                 "bcewithlogits": "binary_cross_entropy_with_logits", "nll": "nll_loss", "l1": "l1_loss",
                 "hingeembedding": "hinge_embedding_loss", "cosineembedding": "cosine_embedding_loss",
                 "marginranking": "margin_ranking_loss", "softmargin": "soft_margin_loss",
                 "poissonnll": "poisson_nll_loss", "gaussiannll": "gaussian_nll_loss", "ctc": "ctc_loss",
                 "multimargin": "multi_margin_loss", "multilabelmargin": "multilabel_margin_loss",
                 "multilabelsoftmargin": "multilabel_soft_margin_loss",
                 "tripletmarginwithdistance": "triplet_margin_with_distance_loss"}
_ALIASES = {"truediv": "div", "floordiv": "floor_divide", "and": "logical_and", "or": "logical_or",
            "log_sigmoid": "logsigmoid", "concat": "cat", "concatenate": "cat", "subtract": "sub",
            "multiply": "mul", "divide": "div", "true_divide": "div", "negative": "neg", "clip": "clamp"}


def normalize_op(name: str, module: bool = False) -> str:
    """A base op name: ``nn.Conv2d`` (``module=True``), ``F.conv2d`` and ``torch.conv2d`` are all ``conv``;
    ``__add__``/``add_`` are ``add``; ``max_pool2d_with_indices`` is ``max_pool_with_indices``."""
    n = name.strip()
    if module:
        low = re.sub(r"[123]d$", "", n.lower())
        if low.endswith("loss") and low != "loss":
            return _LOSS_MODULES.get(low[:-4], low[:-4] + "_loss")
        return _MODULES.get(low, low)
    if n.startswith("__") and n.endswith("__") and len(n) > 4:
        n = n[2:-2]
    n = n.lower().rstrip("_") or n
    n = re.sub(r"(?<=[a-z_])[123]d(_with_indices)?$", r"\1", n)
    n = n.rstrip("_")
    return _ALIASES.get(n, n)


def op_class(name: str, tensor_args: int = 1) -> str | None:
    """The class of a normalised op name (None: ignored or unknown). ``max``/``min`` of two tensors are
    elementwise, of one tensor a reduction."""
    if name in _MAXMIN:
        return "elementwise" if tensor_args >= 2 else "reduction"
    if name in _OP_CLASS:
        return _OP_CLASS[name]
    if name.endswith("_loss"):
        return "loss"
    return None


@dataclass
class OpCall:
    name: str  # normalised
    tensor_args: int = 1  # how many positional/keyword arguments are tensors (or traced values)


@dataclass
class Probe:
    """What building and running a task on the meta device showed."""

    ok: bool = False
    error: str = ""
    stage: str = ""  # where it failed: exec, init, inputs, forward
    ops: list[OpCall] = field(default_factory=list)  # from fx when it traced, else from the recorded calls
    traced_with: str = ""  # fx | function-mode
    input_shapes: list[tuple[int, ...]] = field(default_factory=list)  # tensor inputs only
    output_shapes: list[tuple[int, ...]] = field(default_factory=list)
    input_bytes: int = 0
    output_bytes: int = 0
    param_bytes: int = 0  # parameters and buffers
    flops: float = 0.0  # matmul/conv/attention FLOPs (torch.utils.flop_counter formulas)
    bytes_moved: float = 0.0  # sum over aten ops of bytes read and written (views excluded)
    large_alloc_bytes: float = 0.0  # op outputs of 32 MiB or more (fresh pages on every call)
    aten_ops: int = 0  # aten calls in forward (per-op overhead)
    # work by cost class, priced by evokernel.tasks.fit: "mm" / "conv:<kind>" / "sdpa" FLOPs,
    # "pool:max|avg" window elements, "reduce:<op>" / "reduce_strided:<op>" input elements,
    # "elem:<aten op>" output elements of compute-bound elementwise, norm and loss ops
    work: dict[str, float] = field(default_factory=dict)
    # the fewest values any training-mode batch norm of forward normalises per channel (batch x spatial; 0: no
    # such norm); evokernel.tasks.fit keeps it at BN_MIN_VALUES or more (statistics of 2 values are ill-conditioned)
    bn_min_values: int = 0

    @property
    def total_bytes(self) -> int:
        return self.input_bytes + self.output_bytes + self.param_bytes


# ----------------------------------------------------------------------------------- the meta probe

# aten ops whose cost per output element is compute rather than memory (exp/log/erf/tanh-like, scans,
# norms, losses); evokernel.tasks.fit prices each ("elem:<op>")
COSTLY_ELEMENTWISE = {"exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "tanh", "sigmoid", "erf", "erfc",
                      "erfinv", "gelu", "silu", "mish", "softplus", "elu", "selu", "celu", "pow", "sqrt", "rsqrt",
                      "sin", "cos", "tan", "atan", "sinh", "cosh", "_softmax", "_log_softmax", "logsumexp",
                      "log_sigmoid_forward", "hardswish", "hardsigmoid", "reciprocal", "logit", "cumsum", "cumprod",
                      "logcumsumexp", "cummax", "cummin", "native_layer_norm", "native_group_norm",
                      "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
                      "xlogy", "smooth_l1_loss", "huber_loss", "mse_loss", "nll_loss_forward", "nll_loss2d_forward",
                      "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "sort", "topk",
                      "softplus", "leaky_relu", "hardtanh", "clamp", "where", "masked_fill", "div", "_cdist_forward",
                      "norm", "linalg_vector_norm"}
# aten batch norms; the first bool argument is ``training`` (statistics of the batch, not the running ones)
_BATCH_NORMS = {"native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_functional",
                "batch_norm"}
_POOLS = {"max_pool1d": "max", "max_pool2d": "max", "max_pool3d": "max", "max_pool1d_with_indices": "max",
          "max_pool2d_with_indices": "max", "max_pool3d_with_indices": "max", "avg_pool1d": "avg",
          "avg_pool2d": "avg", "avg_pool3d": "avg", "_adaptive_avg_pool2d": "avg", "_adaptive_avg_pool3d": "avg",
          "adaptive_max_pool2d": "max", "adaptive_max_pool3d": "max", "adaptive_avg_pool1d": "avg",
          "adaptive_max_pool1d": "max"}
# losses reduce to a scalar: priced by input elements (and their full-size temporaries)
_LOSS_OPS = {"smooth_l1_loss", "huber_loss", "mse_loss", "l1_loss", "nll_loss_forward", "nll_loss2d_forward",
             "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "soft_margin_loss",
             "multi_margin_loss", "multilabel_margin_loss_forward", "_cdist_forward"}
_REDUCTIONS = {"sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "logsumexp", "var", "std",
               "var_mean", "std_mean", "norm", "linalg_vector_norm", "all", "any", "nansum", "median", "mode"}


def _conv_kind(args: Any) -> str:
    """The cost class of an aten.convolution call (CPU kernels differ by 10x between them)."""
    inp, weight = args[0], args[1]
    stride, dilation, transposed, groups = args[3], args[5], bool(args[6]), int(args[8]) if len(args) > 8 else 1
    dims = weight.dim() - 2
    if transposed:  # slow CPU kernels: 3-D, strided or dilated transposed convolutions
        plain = dims < 3 and all(s == 1 for s in stride) and all(d == 1 for d in dilation)
        return "conv:transposed" if plain else "conv:transposed_slow"
    if groups > 1:
        return "conv:depthwise" if inp.shape[1] == groups else "conv:grouped"
    if any(d != 1 for d in dilation):
        return "conv:dilated"
    return {1: "conv:1d", 3: "conv:3d"}.get(dims, "conv:regular")


LARGE_ALLOC = 32 << 20  # glibc's largest mmap threshold: bigger blocks are fresh pages on every call


def _torch_modes() -> tuple[type, type]:
    """The two modes of the probe (built lazily: importing this module does not import torch)."""
    # lazy: torch (1-2 s), only when a task is probed on the meta device
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import flop_registry

    meta = torch.device("meta")
    tensor_methods_to = {torch.Tensor.to, torch.Tensor.cuda, torch.Tensor.cpu}

    class Recorder(TorchFunctionMode):
        """Records the top-level torch calls of forward (when ``on``) and keeps devices on meta."""

        def __init__(self) -> None:
            super().__init__()
            self.on = False
            self.calls: list[OpCall] = []

        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = dict(kwargs or {})
            if func in tensor_methods_to:
                if func is not torch.Tensor.to:
                    return args[0]
                rest = [a for a in args[1:] if not isinstance(a, (str, torch.device, torch.Tensor))]
                kwargs.pop("device", None)
                return func(args[0], *rest, **kwargs) if rest or kwargs else args[0]
            if "device" in kwargs and kwargs["device"] is not None:
                kwargs["device"] = meta
            if self.on:
                name = getattr(func, "__name__", "") or ""
                if name == "__get__":  # tensor properties (.shape, .T, ...)
                    name = getattr(getattr(func, "__self__", None), "__name__", "") or "get"
                n_tensors = sum(isinstance(a, torch.Tensor) for a in list(args) + list(kwargs.values()))
                self.calls.append(OpCall(normalize_op(name), n_tensors))
            return func(*args, **kwargs)

    class Counter(TorchDispatchMode):
        """Every aten op: devices forced to meta; when ``on``, bytes moved, FLOPs and op count."""

        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False  # nothing is compiled under this mode; skipping would import torch._dynamo (3 s)

        def __init__(self) -> None:
            super().__init__()
            self.on = False
            self.flops = 0.0
            self.bytes = 0.0
            self.work: dict[str, float] = {}
            self.large = 0.0
            self.ops = 0
            self.bn_min = 0

        def add(self, key: str, amount: float) -> None:
            self.work[key] = self.work.get(key, 0.0) + float(amount)

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = dict(kwargs or {})
            if "device" in kwargs and kwargs["device"] is not None and kwargs["device"] != meta:
                kwargs["device"] = meta
            out = func(*args, **kwargs)
            if not self.on:
                return out
            packet = func._overloadpacket
            name = packet.__name__
            schema = func._schema
            if any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns):
                return out  # a view: no data moves
            self.ops += 1
            moved = 0
            for a in list(args) + list(kwargs.values()):
                for t in (a if isinstance(a, (list, tuple)) else (a,)):
                    if isinstance(t, torch.Tensor):
                        moved += t.numel() * t.element_size()
            outs = out if isinstance(out, (list, tuple)) else (out,)
            out_elems = 0
            for t in outs:
                if isinstance(t, torch.Tensor):
                    nbytes = t.numel() * t.element_size()
                    moved += nbytes
                    out_elems += t.numel()
                    if nbytes >= LARGE_ALLOC:
                        self.large += nbytes
            self.bytes += moved
            base = name.rstrip("_")
            if packet in flop_registry:
                try:
                    f = float(flop_registry[packet](*args, **kwargs, out_val=out))
                except Exception:  # noqa: BLE001 - an unusual signature: no FLOPs, bytes still count
                    f = 0.0
                self.flops += f
                if name in ("convolution", "_convolution"):
                    try:
                        self.add(_conv_kind(args), f)
                    except Exception:  # noqa: BLE001
                        self.add("conv:regular", f)
                else:
                    self.add("mm" if "attention" not in name else "sdpa", f)
            elif "scaled_dot_product" in name and len(args) >= 3:
                q, k, v = args[:3]
                lead = q.numel() // max(1, q.shape[-1] * q.shape[-2])
                f = 2.0 * lead * q.shape[-2] * k.shape[-2] * (q.shape[-1] + v.shape[-1])
                self.flops += f
                self.add("sdpa", f)
                self.add("elem:_softmax", lead * q.shape[-2] * k.shape[-2])
            elif base in _POOLS and args and isinstance(args[0], torch.Tensor):
                window, one_d = 1, "1d" in base
                if "adaptive" in base:
                    window = max(1, args[0].numel() // max(1, out_elems))
                elif len(args) > 1:
                    ks = args[1] if isinstance(args[1], (list, tuple)) else [args[1]]
                    window = 1
                    for k in ks:
                        window *= int(k)
                    nd = int(base.split("pool")[1][0]) if base.split("pool")[1][:1].isdigit() else len(ks)
                    if len(ks) == 1 and nd > 1:
                        window = int(ks[0]) ** nd
                    one_d = one_d or sum(int(k) > 1 for k in ks) <= 1  # F.max_pool1d runs as 2-D (1, k)
                first = outs[0] if outs and isinstance(outs[0], torch.Tensor) else None
                kind = _POOLS[base] + ("1d" if one_d else "")
                self.add(f"pool:{kind}", (first.numel() if first is not None else out_elems) * window)
            elif base in _REDUCTIONS and args and isinstance(args[0], torch.Tensor) and args[0].dim() > 0 \
                    and not (len(args) > 1 and isinstance(args[1], torch.Tensor)):
                x = args[0]
                at = 2 if base in ("norm", "linalg_vector_norm") else 1  # (self, ord, dim)
                dims = args[at] if len(args) > at else kwargs.get("dim")
                if isinstance(dims, int):
                    dims = [dims]
                try:
                    strided = bool(dims) and isinstance(dims, (list, tuple)) and \
                        any((int(d) % x.dim()) != x.dim() - 1 and x.shape[int(d) % x.dim()] > 1 for d in dims)
                except (TypeError, ValueError, IndexError):
                    strided = False
                self.add(f"{'reduce_strided' if strided else 'reduce'}:{base}", x.numel())
            if base in _BATCH_NORMS and args and isinstance(args[0], torch.Tensor) and args[0].dim() >= 2 \
                    and next((a for a in args[1:] if isinstance(a, bool)), False):  # training: batch statistics
                per_channel = args[0].numel() // max(1, args[0].shape[1])
                self.bn_min = per_channel if not self.bn_min else min(self.bn_min, per_channel)
            if base in _LOSS_OPS and args and isinstance(args[0], torch.Tensor):
                n = args[0].numel()
                self.add(f"elem:{base}", n)
                if n * args[0].element_size() >= LARGE_ALLOC:
                    self.large += n * args[0].element_size()  # a full-size temporary inside the kernel
            elif base in COSTLY_ELEMENTWISE and base not in _REDUCTIONS:
                self.add(f"elem:{base}", out_elems)
            return out

    return Recorder, Counter


_MODES: tuple[type, type] | None = None


def _modes() -> tuple[type, type]:
    global _MODES
    if _MODES is None:
        _MODES = _torch_modes()
    return _MODES


def _tensors(x: Any) -> list[Any]:
    import torch  # lazy: torch (1-2 s), only when a task is probed on the meta device

    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for e in x for t in _tensors(e)]
    if isinstance(x, dict):
        return [t for e in x.values() for t in _tensors(e)]
    return []


def _fx_ops(model: Any) -> list[OpCall]:
    # lazy: torch (1-2 s), only when a task is probed on the meta device
    import torch
    import torch.fx

    gm = torch.fx.symbolic_trace(model)
    modules = dict(gm.named_modules())
    ops = []
    for node in gm.graph.nodes:
        if node.op not in ("call_module", "call_function", "call_method"):
            continue
        args = list(node.args) + list(node.kwargs.values())
        n_tensors = sum(isinstance(a, torch.fx.Node) for a in args)
        if node.op == "call_module":
            ops.append(OpCall(normalize_op(type(modules[node.target]).__name__, module=True), max(1, n_tensors)))
            continue
        name = getattr(node.target, "__name__", str(node.target)) if node.op == "call_function" else str(node.target)
        ops.append(OpCall(normalize_op(name), n_tensors))
    return ops


def probe(source: str, filename: str = "<task>", *, count: bool = False, trace: bool = True) -> Probe:
    """Build ``Model(*get_init_inputs())`` and run it on ``get_inputs()`` on the meta device.

    ``count``: also count bytes moved and FLOPs of forward (for the fit); ``trace``: also trace the op
    graph (fx, else the recorded calls). Never raises: failures are in ``Probe.error``/``stage``."""
    p = Probe()
    try:
        import torch  # lazy: torch (1-2 s), only when a task is probed on the meta device
    except Exception as exc:  # noqa: BLE001
        p.error, p.stage = f"torch unavailable: {exc}", "import"
        return p
    Recorder, Counter = _modes()
    rec, cnt = Recorder(), Counter()
    ns: dict[str, Any] = {"__name__": "evokernel_task_probe", "__file__": filename, "__builtins__": builtins}
    stage = "exec"
    model: Any = None
    # a task file may set process-wide state (the seed, the default dtype): put it back afterwards
    saved = (torch.get_default_dtype(), torch.random.get_rng_state())
    try:
        with _lock, warnings.catch_warnings(), torch.device("meta"), rec, cnt, torch.no_grad():
            warnings.simplefilter("ignore")  # a task's own warnings, once per probe: not ours to show
            exec(compile(source, filename, "exec"), ns)
            stage = "init"
            init = ns["get_init_inputs"]()
            model = ns["Model"](*(init or []))
            stage = "inputs"
            inputs = ns["get_inputs"]()
            inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
            for t in _tensors(inputs):
                p.input_shapes.append(tuple(t.shape))
                p.input_bytes += t.numel() * t.element_size()
            if isinstance(model, torch.nn.Module):
                seen = set()
                for t in list(model.parameters()) + list(model.buffers()):
                    if id(t) not in seen:
                        seen.add(id(t))
                        p.param_bytes += t.numel() * t.element_size()
            stage = "forward"
            rec.on, cnt.on = trace, count
            try:
                out = model(*inputs)
            finally:
                rec.on = cnt.on = False
            for t in _tensors(out):
                p.output_shapes.append(tuple(t.shape))
                p.output_bytes += t.numel() * t.element_size()
            p.ok = True
    except BaseException as exc:  # noqa: BLE001 - a task that cannot be probed is reported, never raised
        if isinstance(exc, KeyboardInterrupt):
            raise
        p.stage = stage
        p.error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
    finally:
        torch.set_default_dtype(saved[0])
        torch.random.set_rng_state(saved[1])
    p.flops, p.bytes_moved, p.aten_ops = cnt.flops, cnt.bytes, cnt.ops
    p.work, p.large_alloc_bytes = dict(cnt.work), cnt.large
    p.bn_min_values = cnt.bn_min
    if trace and model is not None:
        p.ops, p.traced_with = rec.calls, "function-mode"
        try:
            with _lock, warnings.catch_warnings(), torch.device("meta"), Counter():
                warnings.simplefilter("ignore")
                p.ops, p.traced_with = _fx_ops(model), "fx"
        except Exception:  # noqa: BLE001 - data-dependent control flow etc.: keep the recorded calls
            pass
    return p


# ----------------------------------------------------------------------------------- the rules


def categorize(ops: list[OpCall], input_shapes: list[tuple[int, ...]] | None = None,
               output_shapes: list[tuple[int, ...]] | None = None) -> str:
    """The category of an op list (rules in the module docstring)."""
    classes: dict[str, int] = {}
    seq: list[str] = []
    for op in ops:
        c = op_class(op.name, op.tensor_args)
        if c is not None:
            classes[c] = classes.get(c, 0) + 1
            seq.append(c)
    if not classes:
        return UNCATEGORIZED
    kinds = set(classes)
    # 1b. a whole model
    if "recurrent" in kinds or sum(classes.get(c, 0) for c in (*ANCHORS, "attention")) >= MODEL_ANCHORS:
        return "model"
    glue = set(GLUE)
    # 2. attention
    manual_attention = classes.get("matmul", 0) >= 2 and "softmax" in kinds and "convolution" not in kinds and \
        seq.index("softmax") > seq.index("matmul") and "matmul" in seq[seq.index("softmax"):]
    if "attention" in kinds or manual_attention:
        return "attention" if kinds <= {"attention", "matmul", "softmax"} | glue else "fusion"
    # 3. anchors
    anchors = kinds & set(ANCHORS)
    if anchors:
        return anchors.pop() if len(kinds) == 1 else "fusion"
    inputs, outputs = input_shapes or [], output_shapes or []
    out_numel = None
    if len(outputs) == 1:
        out_numel = 1
        for d in outputs[0]:
            out_numel *= d
    # 4. loss
    if "loss" in kinds:
        return "loss"
    if out_numel == 1 and len(inputs) >= 2 and "reduction" in kinds:
        return "loss"
    heavy = kinds & set(HEAVY)
    # 5. a reduction broadcast back onto its input
    if "reduction" in heavy and not heavy & {"pooling", "scan", "softmax"} and len(outputs) == 1 and inputs \
            and out_numel not in (None, 1) and outputs[0] == max(inputs, key=lambda s: _numel(s)):
        heavy = (heavy - {"reduction"}) | {"normalization"}
    if "normalization" in heavy and "reduction" in heavy:
        heavy = heavy - {"reduction"}
    # 6. heavy classes
    if len(heavy) == 1:
        return heavy.pop()
    if len(heavy) > 1:
        return "fusion"
    # 7. glue only
    return "activation" if "activation" in kinds else "elementwise"


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def op_mix(ops: list[OpCall]) -> dict[str, int]:
    """Recognised ops per class, most frequent first (what a whole model is made of)."""
    mix: dict[str, int] = {}
    for op in ops:
        c = op_class(op.name, op.tensor_args)
        if c is not None:
            mix[c] = mix.get(c, 0) + 1
    return dict(sorted(mix.items(), key=lambda kv: (-kv[1], kv[0])))


def category_of_probe(p: Probe) -> str:
    if not p.ops:
        return UNCATEGORIZED
    return categorize(p.ops, p.input_shapes, p.output_shapes if p.ok else None)


_cache: dict[str, str] = {}
_mix_cache: dict[str, dict[str, int]] = {}


def remember(key: str, category: str) -> None:
    _cache[key] = category


def infer_category(task: Any) -> str:
    """The category of a Task from its traced op graph (cached per task key; ``uncategorized`` when the
    task cannot be built or traced on the meta device)."""
    key = task.key
    if key in _cache:
        return _cache[key]
    try:
        p = probe(task.source, str(task.path))
        category = category_of_probe(p)
        _mix_cache[key] = op_mix(p.ops)
    except Exception:  # noqa: BLE001 - belt and braces: probe() already catches everything
        category = UNCATEGORIZED
    _cache[key] = category
    return category


def infer_op_mix(task: Any) -> dict[str, int]:
    """Recognised ops per class of a task's traced forward (``{"convolution": 53, "normalization": 53, ...}``);
    {} when it cannot be traced."""
    if task.key not in _mix_cache:
        _cache.pop(task.key, None)
        infer_category(task)
    return dict(_mix_cache.get(task.key, {}))
