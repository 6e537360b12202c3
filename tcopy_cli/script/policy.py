"""The allow-lists: which modules, functions, methods and attributes a script may use.

Everything not named here is refused. The names are plain strings so that the
static check (before anything runs) needs no torch import; the runtime tables in
``sandbox.py`` resolve them against the installed torch and drop names that this
torch version does not have.
"""

from __future__ import annotations

# Modules a script may import, and what ``import X`` / ``from X import y`` may bind
# (filled in at the end of this file, once the name lists exist).
ALLOWED_IMPORTS: dict[str, frozenset[str]] = {}

# torch.* functions (called) -----------------------------------------------------
TORCH_FACTORIES = frozenset(
    """
        tensor as_tensor from_numpy asarray zeros ones empty full rand randn randint
        randperm zeros_like ones_like empty_like full_like rand_like randn_like randint_like
        arange linspace logspace eye empty_strided tril_indices triu_indices manual_seed
        seed initial_seed get_default_dtype set_default_dtype is_grad_enabled
        is_inference_mode_enabled is_anomaly_enabled no_grad enable_grad inference_mode set_grad_enabled
        is_tensor is_floating_point is_complex is_nonzero numel result_type promote_types
        can_cast broadcast_shapes
    """.split()
)

TORCH_OPS = frozenset(
    """
        abs absolute acos acosh add addbmm addcdiv addcmul addmm addmv addr adjoint all
        allclose amax amin aminmax angle any arccos arccosh arcsin arcsinh arctan arctan2
        arctanh argmax argmin argsort argwhere asin asinh atan atan2 atanh atleast_1d
        atleast_2d atleast_3d baddbmm bernoulli bincount bitwise_and bitwise_not bitwise_or
        bitwise_xor block_diag bmm broadcast_tensors broadcast_to bucketize cartesian_prod
        cat concat concatenate cdist ceil chain_matmul cholesky chunk clamp clamp_max
        clamp_min clip clone column_stack combinations complex conj conj_physical copysign
        corrcoef cos cosh count_nonzero cov cross cummax cummin cumprod cumsum deg2rad det
        detach diag diag_embed diagflat diagonal diff digamma dist div divide dot dsplit
        dstack einsum eq equal erf erfc erfinv exp exp2 expm1 flatten flip fliplr flipud
        float_power floor floor_divide fmax fmin fmod frac gather gcd ge greater
        greater_equal gt heaviside histc hsplit hstack hypot index_add index_copy index_fill
        index_put index_reduce index_select inner inverse isclose isfinite isin isinf isnan
        isneginf isposinf isreal kron kthvalue lcm ldexp le lerp less less_equal lgamma log
        log10 log1p log2 logaddexp logaddexp2 logcumsumexp logdet logical_and logical_not
        logical_or logical_xor logit logsumexp lt masked_fill masked_scatter masked_select
        matmul matrix_exp matrix_power max maximum mean median min minimum mm mode moveaxis
        movedim msort mul multinomial multiply mv mvlgamma nan_to_num nanmean nanmedian
        nanquantile nansum narrow narrow_copy ne neg negative nextafter nonzero norm normal
        not_equal numel outer permute pinverse polar pow prod quantile rad2deg ravel real
        reciprocal relu remainder renorm repeat_interleave reshape resolve_conj resolve_neg
        roll rot90 round rsqrt scatter scatter_add scatter_reduce searchsorted select
        select_scatter sgn sigmoid sign signbit sin sinc sinh slice_scatter softmax
        log_softmax sort split sqrt square squeeze stack std std_mean sub subtract sum svd
        swapaxes swapdims t take take_along_dim tan tanh tensor_split tensordot tile topk
        trace transpose trapezoid trapz tril triu true_divide trunc unbind unflatten unique
        unique_consecutive unravel_index unsqueeze vander var var_mean vdot view_as_complex
        view_as_real vsplit vstack where xlogy dropout view_copy
    """.split()
)

# torch.* classes that may be called (constructors) and used in isinstance().
TORCH_CLASSES = frozenset(
    """
        Tensor device Size dtype FloatTensor DoubleTensor HalfTensor BFloat16Tensor
        LongTensor IntTensor ShortTensor CharTensor ByteTensor BoolTensor Generator
    """.split()
)

TORCH_CONSTANTS = frozenset(
    """
        float32 float float64 double float16 half bfloat16 int8 int16 int32 int int64 long
        uint8 bool complex64 cfloat complex128 cdouble pi e inf nan strided short
    """.split()
)

# torch submodules: name -> allowed function names in it.
TORCH_SUBMODULES: dict[str, frozenset[str]] = {
    "cuda": frozenset(["is_available", "device_count", "current_device", "synchronize", "memory_allocated"]),
    # torch.accelerator (2.6+): which accelerator this run has, if any.
    "accelerator": frozenset(["is_available", "current_accelerator", "device_count", "current_device_index"]),
    "autograd": frozenset(
        ["grad", "backward", "Variable", "set_detect_anomaly", "detect_anomaly", "gradcheck", "gradgradcheck"]
    ),
    "linalg": frozenset(
        """
            norm vector_norm matrix_norm det inv solve svd qr eigh eigvalsh cholesky pinv
            matrix_rank cross matmul vecdot
        """.split()
    ),
}

MATH_NAMES = frozenset(
    """
        pi e inf nan tau sqrt exp log log2 log10 log1p expm1 sin cos tan asin acos atan
        atan2 sinh cosh tanh floor ceil trunc fabs isnan isinf isfinite isclose hypot
        degrees radians copysign fmod erf erfc gamma lgamma
    """.split()
)

# Tensor methods (called). In-place variants are listed explicitly.
_TENSOR_OP_METHODS = TORCH_OPS - {"detach", "clone"}
TENSOR_METHODS = frozenset(
    set(_TENSOR_OP_METHODS)
    | set(
        """
            clone detach detach_ copy_ new_tensor new_zeros new_ones new_empty new_full
            requires_grad_ backward retain_grad zero_ fill_ normal_ uniform_ random_
            bernoulli_ exponential_ geometric_ cauchy_ log_normal_ data_ptr untyped_storage
            storage_offset stride size dim numel element_size nelement is_contiguous
            contiguous is_set_to is_floating_point is_complex is_signed is_shared is_pinned
            numpy tolist item cpu cuda to type type_as float double half bfloat16 int long
            short char byte bool cfloat cdouble view view_as reshape_as expand expand_as
            repeat unfold as_strided squeeze_ unsqueeze_ t_ transpose_ resize_ resize_as_
            add_ sub_ mul_ div_ pow_ neg_ abs_ exp_ log_ sqrt_ sin_ cos_ tanh_ sigmoid_
            relu_ clamp_ clamp_min_ clamp_max_ clip_ floor_ ceil_ round_ trunc_ frac_
            reciprocal_ sign_ masked_fill_ index_fill_ index_add_ index_copy_ scatter_
            scatter_add_ addcmul_ addcdiv_ lerp_ copysign_ fmod_ remainder_ square_ rsqrt_
            exp2_ expm1_ log1p_ log2_ log10_ erf_ erfinv_ tril_ triu_ addmm_ baddbmm_ put_
            index_put_ masked_scatter_ floor_divide_ true_divide_ multiply_ subtract_
            divide_ logical_not_ logical_and_ logical_or_ nan_to_num_ sgn_ hypot_ atan2_
            pin_memory share_memory is_inference requires_grad
            register_post_accumulate_grad_hook masked_fill index_put diag_embed norm
            dim_order storage _is_view new resize
        """.split()
    )
    | {"register_hook", "register_post_accumulate_grad_hook"} - {"share_memory", "requires_grad", "pin_memory"}
)

TENSOR_PROPERTIES = frozenset(
    """
        data grad grad_fn is_leaf requires_grad retains_grad shape dtype device ndim T mT H
        mH real imag is_cuda is_cpu is_meta is_mps is_sparse layout itemsize nbytes _version
        _base
    """.split()
)

# Tensor attributes a script may assign to.
TENSOR_SETTABLE = frozenset({"requires_grad", "grad", "data"})

# Attributes of other values scripts see.
SIZE_METHODS = frozenset({"numel", "index", "count"})
DTYPE_ATTRS = frozenset({"is_floating_point", "is_complex", "is_signed", "itemsize"})
DEVICE_ATTRS = frozenset({"type", "index"})
# A random number generator (torch.Generator().manual_seed(42), passed as generator= to randn,
# multinomial ...; torch.manual_seed returns the default one): seeding it and reading its state.
# Not set_state: torch (2.13) checks a state's bytes only in part, and reads them at 5,056 times a
# view's offset; a crafted state reads past the generator's memory.
GENERATOR_ATTRS = frozenset({"device"})
GENERATOR_METHODS = frozenset({"manual_seed", "seed", "initial_seed", "get_state"})
# Storages are read-only: sizes and addresses, and items by index (s[0]); never written.
STORAGE_METHODS = frozenset({"data_ptr", "nbytes", "size", "element_size", "untyped", "tolist"})
STORAGE_ATTRS = frozenset({"device", "dtype"})
# Private autograd attributes tutorials read, by exact name: what a graph node saved for
# backward. ``_raw_saved_*`` (the SavedTensor) can be read, not hooked: tcopy reads every
# saved tensor after each step, which would run a script's unpack hook each time.
SAVED_NAMES = "self other result mat1 mat2 exponent weight input indices mask alpha dim".split()
NODE_SAVED_ATTRS = frozenset(f"_saved_{n}" for n in SAVED_NAMES) | frozenset(
    f"_raw_saved_{n}" for n in SAVED_NAMES if n not in ("alpha", "dim", "exponent")
)
SAVED_TENSOR_METHODS: frozenset[str] = frozenset()
NODE_METHODS = frozenset({"name", "register_hook", "register_prehook"})
# The ctx of a custom autograd Function: what forward and backward use. Attributes the
# script sets itself (ctx.alpha = 2) are readable too.
CTX_METHODS = frozenset({"save_for_backward", "mark_dirty", "mark_non_differentiable", "set_materialize_grads"})
CTX_ATTRS = frozenset({"saved_tensors", "needs_input_grad"}) | CTX_METHODS
NODE_ATTRS = frozenset({"next_functions"}) | NODE_SAVED_ATTRS
NDARRAY_METHODS = frozenset(
    """
        tolist item sum mean min max copy reshape astype flatten fill argmax argmin all any
        transpose
    """.split()
)
NDARRAY_ATTRS = frozenset(["shape", "dtype", "ndim", "size", "itemsize", "nbytes", "T"])
NPDTYPE_ATTRS = frozenset({"name", "itemsize", "kind"})
STR_METHODS = frozenset(
    """
        upper lower strip lstrip rstrip split rsplit join replace startswith endswith title
        capitalize splitlines isdigit isalpha isspace find count
    """.split()
)
# str.format and str.format_map: called through tcopy's own formatter (formatting.py).
FORMAT_METHODS = frozenset({"format", "format_map"})
LIST_METHODS = frozenset(
    """
    append extend pop insert index count reverse sort copy clear remove
""".split()
)
DICT_METHODS = frozenset(["keys", "values", "items", "get", "pop", "update", "copy", "setdefault", "clear"])
TUPLE_METHODS = frozenset({"index", "count"})
NUMBER_ATTRS = frozenset({"real", "imag"})
NUMBER_METHODS = frozenset({"is_integer", "bit_length", "conjugate"})
RANGE_ATTRS = frozenset({"start", "stop", "step"})
# Fields of torch.return_types named tuples (torch.max(x, 0).values ...).
RETURN_TYPE_FIELDS = frozenset(
    """
        values indices U S V Q R L eigenvalues eigenvectors sign logabsdet solution mantissa
        exponent output counts inverse_indices mean std var
    """.split()
)

# Builtins a script may call.
SAFE_BUILTINS = frozenset(
    """
    print len range abs min max sum float int bool str list tuple dict set round isinstance type
    enumerate zip sorted reversed any all map super id input breakpoint format slice
    """.split()
)

# Exception classes a script may catch and raise. tcopy's own refusals and limit errors
# are never catchable, so a script can't hide them or loop around them.
SAFE_EXCEPTIONS = frozenset(
    """
    RuntimeError TypeError ValueError AttributeError IndexError KeyError AssertionError
    ZeroDivisionError Exception
    """.split()
)

# torch.nn: layers, losses and helpers a script may use (and subclass nn.Module).
NN_NAMES = frozenset(
    """
    Module Linear LazyLinear Bilinear Conv1d Conv2d ConvTranspose2d ReLU LeakyReLU Sigmoid Tanh GELU SiLU ELU Softmax
    LogSoftmax Sequential ModuleList ModuleDict Dropout BatchNorm1d BatchNorm2d LayerNorm Embedding Flatten
    Identity MaxPool2d AvgPool2d MSELoss L1Loss CrossEntropyLoss NLLLoss BCELoss BCEWithLogitsLoss
    SmoothL1Loss Parameter functional init
    """.split()
)
NN_INIT_NAMES = frozenset("zeros_ ones_ constant_ normal_ uniform_ xavier_uniform_ kaiming_uniform_ eye_".split())
FUNCTIONAL_NAMES = frozenset(
    """
    relu relu_ relu6 leaky_relu leaky_relu_ elu elu_ gelu silu sigmoid tanh softmax log_softmax softplus
    threshold threshold_ hardtanh hardtanh_ mse_loss l1_loss smooth_l1_loss cross_entropy nll_loss
    binary_cross_entropy binary_cross_entropy_with_logits kl_div dropout linear normalize pad one_hot conv1d
    conv2d max_pool2d avg_pool2d embedding layer_norm batch_norm cosine_similarity interpolate
    """.split()
)
OPTIM_NAMES = frozenset("SGD Adam AdamW RMSprop Adagrad".split())
MODULE_METHODS = frozenset(
    """
    parameters named_parameters buffers named_buffers children named_children modules named_modules zero_grad
    requires_grad_ train eval state_dict load_state_dict forward to cpu cuda double float half type
    register_buffer register_parameter add_module register_forward_hook register_forward_pre_hook
    register_full_backward_hook register_full_backward_pre_hook
    """.split()
)
MODULE_ATTRS = frozenset(
    """
    training weight bias in_features out_features in_channels out_channels kernel_size stride padding
    num_features normalized_shape eps momentum running_mean running_var num_batches_tracked num_embeddings
    embedding_dim padding_idx p affine track_running_stats dilation groups bias_ih bias_hh inplace
    """.split()
)
OPTIMIZER_METHODS = frozenset({"step", "zero_grad", "state_dict", "add_param_group"})
OPTIMIZER_ATTRS = frozenset({"param_groups", "defaults"})
# NumPy ufuncs a script may call (also with out=: an array the script holds, written in
# place). Their attributes (np.add.reduce, .at ...) are not reachable.
NUMPY_UFUNCS = frozenset(
    """
    add subtract multiply divide true_divide floor_divide power negative positive absolute fabs sign
    sin cos tan arcsin arccos arctan arctan2 sinh cosh tanh exp exp2 expm1 log log2 log10 log1p
    square sqrt cbrt reciprocal maximum minimum fmax fmin floor ceil trunc rint clip isnan isinf
    isfinite greater greater_equal less less_equal equal not_equal logical_and logical_or logical_not
    """.split()
)
# numpy.random: the legacy global functions, on a generator of the run's own.
NUMPY_RANDOM_NAMES = frozenset(
    """
    seed rand randn randint random random_sample normal uniform standard_normal choice shuffle
    permutation
    """.split()
)
NUMPY_NAMES = (
    frozenset(
        """
    array asarray zeros ones empty full arange linspace copy shares_memory may_share_memory float32 float64
    float16 int64 int32 int8 uint8 bool_ ndarray sum mean abs sqrt exp log allclose array_equal
    random
    """.split()
    )
    | NUMPY_UFUNCS
)
NODE_HOOK_METHODS = frozenset({"register_hook", "register_prehook"})
# torch.autograd.functional: functions of a script function.
AUTOGRAD_FUNCTIONAL_NAMES = frozenset("jacobian hessian vjp jvp hvp vhp".split())
# Process-wide display settings: bounded (see sandbox.set_printoptions).
# torch.set_default_device is accepted for the run's own device only (--device chooses it).
TORCH_SETTINGS = frozenset({"set_printoptions", "set_default_device"})
# Hooks torch calls while a module runs forward: their statements are steps, as forward's are.
FORWARD_HOOK_TAKERS = frozenset({"register_forward_hook", "register_forward_pre_hook"})
# Functions and methods that may be given a script-defined function (hook, key, mapping).
CALLABLE_TAKERS = frozenset(
    {
        "register_hook",
        "register_post_accumulate_grad_hook",
        "register_prehook",
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_full_backward_hook",
        "register_full_backward_pre_hook",
        "gradcheck",
        "gradgradcheck",
        *AUTOGRAD_FUNCTIONAL_NAMES,
        "map",
        "sorted",
        "min",
        "max",
        "step",  # optimizer.step(closure)
    }
)

# Names refused outright, with a reason, before the script runs.
FORBIDDEN_NAMES: dict[str, str] = {
    name: "it can run or load arbitrary code or reach Python internals"
    for name in """
        eval exec compile open getattr setattr delattr hasattr __import__ globals locals
        vars exit quit help dir memoryview object classmethod
        staticmethod property hash callable iter next repr ascii chr ord bytes
        bytearray __builtins__ __loader__ __spec__ __file__ filter BaseException SystemExit
        KeyboardInterrupt GeneratorExit
    """.split()
}
FORBIDDEN_NAMES.update(
    {
        "open": "scripts may not read or write files",
        "exit": "scripts may not end tcopy",
        "globals": "globals() would hand the script tcopy's own namespace; use the names directly "
        "(and 'global NAME' inside a function)",
        "quit": "scripts may not end tcopy",
    }
)

# torch attributes refused with a specific reason (everything else not listed above
# is refused as "not in tcopy's allow-list").
TORCH_FORBIDDEN: dict[str, str] = {
    "load": "torch.load reads files and can unpickle code",
    "save": "torch.save writes files",
    "from_file": "torch.from_file reads files",
    "hub": "torch.hub downloads and runs code",
    "jit": "torch.jit compiles and loads code",
    "compile": "torch.compile generates and runs code",
    "ops": "torch.ops reaches raw operator registrations",
    "classes": "torch.classes reaches raw class registrations",
    "utils": "torch.utils includes code loading and data loading",
    "backends": "torch.backends changes process-wide settings",
    "library": "torch.library registers operators",
}

ALLOWED_DUNDER_NAMES = frozenset({"__name__"})
# Decorators a method of a script class may have (by name; refused as plain names).
METHOD_DECORATORS = frozenset({"staticmethod", "classmethod", "property"})
# Decorators of script functions and methods: torch's grad-mode switches, called or not.
GRAD_MODE_DECORATORS = frozenset({"no_grad", "enable_grad", "inference_mode", "set_grad_enabled"})
# The only dunder methods a script class may define, and the only dunder attribute a
# script may touch (as super().__init__()).
ALLOWED_DUNDER_METHODS = frozenset({"__init__"})
UNDERSCORE_ATTRS = frozenset({"_version", "_base", "_is_view", "__version__"}) | NODE_SAVED_ATTRS
# Module attributes read as values: torch.__version__ (a str subclass that compares as a
# version), numpy.__version__ (a str).
VERSION_ATTRS = frozenset({"__version__"})


def all_attribute_names() -> frozenset[str]:
    """Every attribute name any allowed value may expose (for the static check)."""
    names: set[str] = set()
    for group in (
        TORCH_FACTORIES,
        TORCH_OPS,
        TORCH_CLASSES,
        TORCH_CONSTANTS,
        frozenset(TORCH_SUBMODULES),
        MATH_NAMES,
        TENSOR_METHODS,
        TENSOR_PROPERTIES,
        SIZE_METHODS,
        DTYPE_ATTRS,
        DEVICE_ATTRS,
        GENERATOR_ATTRS,
        GENERATOR_METHODS,
        STORAGE_METHODS,
        STORAGE_ATTRS,
        NODE_METHODS,
        NODE_ATTRS,
        SAVED_TENSOR_METHODS,
        CTX_ATTRS,
        NDARRAY_METHODS,
        NDARRAY_ATTRS,
        NPDTYPE_ATTRS,
        STR_METHODS,
        FORMAT_METHODS,
        LIST_METHODS,
        DICT_METHODS,
        TUPLE_METHODS,
        NUMBER_ATTRS,
        NUMBER_METHODS,
        RANGE_ATTRS,
        RETURN_TYPE_FIELDS,
        frozenset({"copy", "deepcopy"}),
        TIME_NAMES,
        TIMEIT_NAMES,
        RANDOM_NAMES,
        PDB_NAMES,
        NN_NAMES,
        NN_INIT_NAMES,
        FUNCTIONAL_NAMES,
        OPTIM_NAMES,
        MODULE_METHODS,
        MODULE_ATTRS,
        OPTIMIZER_METHODS,
        OPTIMIZER_ATTRS,
        NUMPY_NAMES,
        NUMPY_RANDOM_NAMES,
        ITERTOOLS_NAMES,
        NODE_HOOK_METHODS,
        frozenset({"nn", "optim", "args", "apply", "Function", "function", "functional", "graph", "Node"}),
        AUTOGRAD_FUNCTIONAL_NAMES,
        TORCH_SETTINGS,
        VERSION_ATTRS,
    ):
        names |= group
    for sub in TORCH_SUBMODULES.values():
        names |= sub
    return frozenset(names)


TIME_NAMES = frozenset({"time", "perf_counter", "monotonic", "process_time", "time_ns", "perf_counter_ns"})
TIMEIT_NAMES = frozenset({"default_timer"})
RANDOM_NAMES = frozenset(
    "random randint randrange uniform gauss normalvariate choice choices shuffle sample seed getrandbits".split()
)
PDB_NAMES = frozenset({"set_trace"})
# itertools.count only: an endless counter, bounded by --max-iterations when consumed.
ITERTOOLS_NAMES = frozenset({"count"})
# Packages tcopy offers (some of) itself: anything else imported from these is refused
# up front. Any other module binds an inert placeholder (see sandbox.Placeholder).
OFFERED_PACKAGES = frozenset({"torch", "numpy", "copy", "math", "time", "timeit", "random", "pdb", "itertools"})

ALLOWED_IMPORTS.update(
    {
        "torch": TORCH_FACTORIES
        | TORCH_OPS
        | TORCH_CLASSES
        | TORCH_CONSTANTS
        | frozenset(TORCH_SUBMODULES)
        | TORCH_SETTINGS
        | frozenset({"nn", "optim", "set_default_device"}),
        "torch.nn": NN_NAMES,
        "torch.nn.functional": FUNCTIONAL_NAMES,
        "torch.nn.init": NN_INIT_NAMES,
        "torch.optim": OPTIM_NAMES,
        "torch.autograd": TORCH_SUBMODULES["autograd"] | {"Function", "function", "functional", "graph"},
        "torch.autograd.function": frozenset({"Function"}),
        "torch.autograd.functional": AUTOGRAD_FUNCTIONAL_NAMES,
        "torch.autograd.graph": frozenset({"Node"}),
        "numpy": NUMPY_NAMES,
        "numpy.random": NUMPY_RANDOM_NAMES,
        "itertools": ITERTOOLS_NAMES,
        "copy": frozenset({"copy", "deepcopy"}),
        "math": MATH_NAMES,
        "time": TIME_NAMES,
        "timeit": TIMEIT_NAMES,
        "random": RANDOM_NAMES,
        "pdb": PDB_NAMES,
    }
)

ALL_ATTRIBUTE_NAMES = all_attribute_names()
