"""Catalogue entries whose explanation is one text about one operation and the tensor it works on.

Each row: id, pattern (the stable part of torch's message), text (see ``catalogue.template``
for the fields), and which operation of the statement it is about.
"""

from __future__ import annotations

from tcopy_cli.explain.errors.catalogue import template

template(
    "inplace.multi-output-view",
    r"Output (?P<n>\d+) of (?P<fn>\w+) is a view and is being modified inplace\. This view is the output of a "
    r"function that returns multiple views",
    "{op} on {where} writes into {who}, output {n} of {fn}{made}. {fn} returns several views of one tensor at once, "
    "and autograd can't track an in-place change to one of them. Fix: {fix}, or take a copy first: "
    "{who} = {who}.clone().",
    in_place=True,
)
template(
    "inplace.no-grad-view",
    r"A view was created in no_grad mode and is being modified inplace with grad mode enabled",
    "{op} on {where} writes, with gradients on, into {who}, a view made inside torch.no_grad(){made}. Torch can't "
    "tell whether the write should be tracked, so it refuses. Fix: put both the view and the write inside the "
    "no_grad block (not tracked), or make the view outside it (tracked).",
    in_place=True,
)
template(
    "inplace.detach-view",
    r"Can't detach views in-place",
    "{op} on {where}: {who} is a view{made}, and detaching a view in place would also change its base's graph. "
    "Fix: {who} = {who}.detach() (a new tensor sharing the memory).",
    calls=("detach_",),
)
template(
    "inference.requires-grad",
    r"Setting requires_grad=True on inference tensor outside InferenceMode is not allowed",
    "{op} on {where}: {who} is an inference tensor, created inside torch.inference_mode(){made}, and inference "
    "tensors can never join autograd. Fix: {who} = {who}.clone().requires_grad_() (a normal copy), or create it "
    "under torch.no_grad() instead of inference_mode().",
    calls=("requires_grad_", "setattr"),
)
template(
    "autograd.retain-grad",
    r"can't retain_grad on Tensor that has requires_grad=False",
    "{op} on {where}: {who} does not require grad, so no gradient will ever reach it to be kept. Fix: compute "
    "{who} from a tensor created with requires_grad=True (retain_grad is for non-leaf results).",
    calls=("retain_grad",),
)
template(
    "numpy.requires-grad",
    r"Can't call numpy\(\) on Tensor that requires grad",
    "{op} on {where}: {who} requires grad, and an array sharing its memory would let changes bypass autograd. "
    "Fix: {who}.detach().numpy() (still shares memory with {who}), or {who}.detach().cpu().numpy().copy() for an "
    "independent array.",
    calls=("numpy",),
)
template(
    "numpy.device",
    r"can't convert (?P<dev>\w+(?::\d+)?) device type tensor to numpy",
    "{op} on {where}: {who} lives on the {dev} device, and a NumPy array can only view host memory. "
    "Fix: {who}.cpu().numpy() (a copy in host memory).",
    calls=("numpy",),
    types=("TypeError",),
)
template(
    "scalar.item",
    r"a Tensor with (?P<n>\d+) elements cannot be converted to Scalar",
    "{op} on {where}: {who} has {n} elements, and item() returns one Python number. Fix: reduce first "
    "({who}.sum().item()), pick one ({who}[0].item()), or use {who}.tolist() for all of them.",
    calls=("item",),
)
template(
    "shape.expand",
    r"The expanded size of the tensor \((?P<want>-?\d+)\) must match the existing size \((?P<have>\d+)\) at "
    r"non-singleton dimension (?P<d>\d+)",
    "{op} on {where}: {who} is {shape}; expand can only stretch dims of size 1 (it repeats without copying), and "
    "dim {d} has size {have}, not 1, where {want} was asked. Fix: ask for {have} there, or {who}.repeat(...) to "
    "copy, or unsqueeze a new dim of size 1 first.",
    calls=("expand", "expand_as", "broadcast_to"),
)
template(
    "shape.permute",
    r"number of dimensions in the tensor input does not match the length of the desired ordering of dimensions.*?"
    r"input\.dim\(\) = (?P<n>\d+) is not equal to len\(dims\) = (?P<k>\d+)",
    "{op} on {where}: {who} is {shape} ({n} dims) but the order lists {k}; permute needs every dim exactly once. "
    "Fix: list {n} dims, or use transpose(d0, d1) to swap two.",
    calls=("permute", "torch.permute"),
)
template(
    "shape.dim-range",
    r"Dimension out of range \(expected to be in range of \[(?P<lo>-?\d+), (?P<hi>-?\d+)\], but got (?P<got>-?\d+)\)",
    "{op} on {where}: {who} is {shape}, {ndim} dims, so dim must be in [{lo}, {hi}] (negative counts from the "
    "end); {got} is not. Fix: dim={hi} (or -1) for the last dim.",
    types=("IndexError",),
)
template(
    "loss.one-hot",
    r"one_hot is only applicable to index tensor",
    "{op} on {where}: {who} is {dtype}; one_hot takes int64 class indices. Fix: F.one_hot({who}.long()).",
    calls=("one_hot", "F.one_hot"),
)
template(
    "loss.bce-range",
    r"all elements of input should be between 0 and 1",
    "{op} on {where}: {who} must hold probabilities in [0, 1], and it does not (raw scores/logits?). Fix: "
    "F.binary_cross_entropy_with_logits({who}, ...) (applies the sigmoid itself, more stable), or "
    "torch.sigmoid({who}) first.",
    calls=("binary_cross_entropy", "F.binary_cross_entropy"),
)
template(
    "autograd.requires-grad-non-leaf",
    r"you can only change requires_grad flags of leaf variables",
    "{op} on {where}: {who} is not a leaf: it has grad_fn {grad_fn}{made}, so whether it requires grad follows "
    "from its inputs and can't be switched. Fix: {who} = {who}.detach() gives a tensor cut from the graph (then "
    "{who}.requires_grad_() makes it a new leaf if you want gradients there).",
    calls=("setattr", "requires_grad_"),
)
template(
    "deepcopy.non-leaf",
    r"Only Tensors created explicitly by the user \(graph leaves\) support the deepcopy protocol",
    "{op} on {where}: {who} is a result of an operation (grad_fn {grad_fn}){made}. deepcopy only copies leaves "
    "(tensors you created), since it can't copy the graph behind a result. Fix: {who}.detach().clone() for an "
    "independent copy, or {who}.clone() to stay in the graph.",
    calls=("deepcopy", "copy.deepcopy"),
)
template(
    "shape.matvec",
    r"size mismatch, got input \((?P<n>\d+)\), mat \((?P<r>\d+)x(?P<c>\d+)\), vec \((?P<v>\d+)\)",
    "{op} on {where}: {a} is {a_shape} and {b} is {b_shape}; a matrix-vector product needs {a}'s columns ({c}) to "
    "equal {b}'s length ({v}). Fix: use a vector of length {c}, or {a}.T @ {b} if {b} matches the rows.",
    calls=("matmul", "mv"),
    fallback="The matrix-vector product on {where} needs the matrix's columns ({c}) to equal the vector's "
    "length ({v}).",
)
template(
    "shape.bmm",
    r"Expected size for first two dimensions of batch2 tensor to be: \[(?P<want>[^\]]*)\] but got: \[(?P<got>[^\]]*)\]",
    "{op} on {where}: {a} is {a_shape} and {b} is {b_shape}; a batched product needs the same batch size and {a}'s "
    "last dim == {b}'s dim 1 (expected [{want}, ...], got [{got}, ...]). Fix: transpose {b}'s last two dims "
    "({b}.transpose(1, 2)) or reshape one side.",
    calls=("bmm", "matmul", "baddbmm"),
)
template(
    "shape.dot",
    r"inconsistent tensor size, expected tensor \[(?P<n>\d+)\] and src \[(?P<k>\d+)\]",
    "{op} on {where}: {a} has {n} elements and {b} has {k}; a dot product needs equal lengths. Fix: slice or pad "
    "one of them.",
    calls=("dot", "vdot", "inner"),
)
template(
    "loss.batch-size",
    r"Expected input batch_size \((?P<n>\d+)\) to match target batch_size \((?P<k>\d+)\)",
    "{op} on {where}: {a} is {a_shape} ({n} samples) but {b} is {b_shape} ({k} targets); every sample needs exactly "
    "one target. Fix: slice or reshape so both start with the same batch size (a flattened input? check {a}'s shape).",
    types=("ValueError",),
    fallback="The loss on {where} got {n} predictions but {k} targets. Fix: one target per sample.",
)
template(
    "loss.bce-size",
    r"Using a target size \(torch\.Size\(\[[^\]]*\]\)\) that is different to the input size",
    "{op} on {where}: {a} is {a_shape} but {b} is {b_shape}; this loss compares element by element and will not "
    "broadcast. Fix: {a}.squeeze(-1) or {b}.view_as({a}).",
    types=("ValueError",),
)
template(
    "inplace.leaf",
    r"(?<!view of )a leaf Variable that requires grad (?:is being|has been) used in an in-place operation",
    "{op} on {where} writes into {who}, a leaf that requires grad{made}. Autograd needs {who}'s values as they are "
    "to compute gradients with respect to {who}, so it refuses the write. Fix: if this is a parameter update, do it "
    "under 'with torch.no_grad(): {op}'; if you want a new tensor, write it out of place: {fix}.",
    in_place=True,
    fallback="An in-place operation on {where} would overwrite a leaf tensor that requires grad; autograd could not "
    "compute its gradient afterwards. Fix: do the update under 'with torch.no_grad():' (as optimizers do), or work "
    "on a clone().",
)
