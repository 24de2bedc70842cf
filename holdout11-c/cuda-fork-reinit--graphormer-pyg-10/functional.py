from multiprocessing import Pool
def batched_shortest_path_distance(data: Batch) -> Tuple[Dict[int, List[int]], Dict[int, List[int]]]:
    pool = Pool()
    relabeled_graphs = []
    shift = 0
    for graph in pool.map(to_networkx, data.to_data_list()):
        num_nodes = graph.number_of_nodes()
        relabeled_graphs.append(nx.relabel_nodes(graph, {i: i + shift for i in range(num_nodes)}))
        shift += num_nodes

    node_paths = {}
    edge_paths = {}

    for path in pool.map(all_pairs_shortest_path, relabeled_graphs):
        for k, v in path[0].items():
            node_paths[k] = v
        for k, v in path[1].items():
            edge_paths[k] = v

    return node_paths, edge_paths
