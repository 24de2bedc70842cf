1. conda install -c open3d-admin open3d
2. python -c "import open3d as o3d"
3. See error
