# inference tensors have no version counter
with torch.inference_mode():
    t = torch.ones(3)
# plain: assert t.is_inference()
w = torch.ones(3, requires_grad=True)
u = t * 2
# plain: assert not u.is_inference() and not u.requires_grad
v = (t * w).sum()  # expect: RuntimeError
t.add_(1)  # expect: RuntimeError
