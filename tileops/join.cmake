# Joins the .tile files IN (a list) into OUT, atomically (a build interrupted half-way leaves no
# half-written source): cmake -DIN=a.tile;b.tile -DOUT=out.tile -P join.cmake
set(text "")
foreach(f IN LISTS IN)
  file(READ ${f} part)
  string(APPEND text "// ---- ${f}\n" "${part}")
endforeach()
file(WRITE ${OUT}.tmp "${text}")
file(RENAME ${OUT}.tmp ${OUT})
