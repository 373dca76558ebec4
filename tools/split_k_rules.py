# Writes the split-K rules once written by hand (levels 1..2 = 2, 4 groups;
# now generated: the splitk space's and generate --derivations', shipped in
# rules/generated.rules), one per
# convolution form: python3 tools/split_k_rules.py
# (Eight groups is not among them: its proof from the halving axioms needs
# more than verify's 20000 rewritten forms, so it was proved only when Z3
# happened to combine what the search found in time, not robustly.)
def rule(levels, cin, cout, params):
    conv = f"conv2d{params}"
    def kparts(expr, c, lv):
        if lv == 0: return expr
        h = c // 2
        a = f"split[axis=1, sizes={h}x{h}]({expr}).0"; b = f"split[axis=1, sizes={h}x{h}]({expr}).1"
        return f"concat[axis=0]({kparts(a, h, lv-1)}, {kparts(b, h, lv-1)})"
    Y = f"{conv}(i0, {kparts('k0', cin, levels)})"
    def ysum(expr, o, lv):
        if lv == 0: return expr
        h = o // 2
        return f"add({ysum(f'split[axis=1, sizes={h}x{h}]({expr}).0', h, lv-1)}, {ysum(f'split[axis=1, sizes={h}x{h}]({expr}).1', h, lv-1)})"
    return f"{conv}(i0, k0) => {ysum(Y, cout << levels, levels)}"
import sys
forms = [("", "i0=1x{c}x5x5,k0=3x{c}x3x3"), ("[stride=2x2, pad=1x1x1x1]", "i0=1x{c}x6x6,k0=3x{c}x3x3"), ("[stride=2x2, pad=valid]", "i0=1x{c}x6x6,k0=3x{c}x1x1")]
for params, shapes in forms:
    for lv, cin in ((1, 4), (2, 8)):
        print(rule(lv, cin, 3, params) + " | " + shapes.format(c=cin))
