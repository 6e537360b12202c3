# what no_grad, enable_grad and set_grad_enabled do to results
w = torch.ones(2, requires_grad=True)
with torch.no_grad():
    a = w * 2
    with torch.enable_grad():
        b = w * 2
# plain: assert not a.requires_grad and b.requires_grad
torch.set_grad_enabled(False)
c = w * 2
torch.set_grad_enabled(True)
# plain: assert not c.requires_grad
with torch.no_grad():
    w.mul_(2)
# plain: assert w.is_leaf and w._version == 1
d = w.detach().requires_grad_()
# plain: assert d.is_leaf and d.requires_grad and shares_counter(d, w)
